// Checks of the DSM through the public API, one scenario per run (argv[1]); SPMD, any number of
// nodes. Every scenario compares what shared memory holds with what a sequential run computes and
// prints "verified: SCENARIO" on rank 0, or ends the job with the first difference.
#include <lmdx/lmdx.h>

#include <lmdx/lmdx.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank_ = -1;
int size_ = 0;

[[noreturn]] void Die(const std::string& what) {
  std::string text = "rank " + std::to_string(rank_) + ": FAILED: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Check(bool ok, const std::string& what) {
  if (!ok) Die(what);
}

void Barrier() {
  if (lmdx_barrier_all() != LMDX_OK) Die("lmdx_barrier_all");
}

template <typename T>
T* Var(const char* name, std::size_t count) {
  auto* data = static_cast<T*>(lmdx_shared_var(name, count * sizeof(T)));
  Check(data != nullptr, std::string("lmdx_shared_var ") + name);
  return data;
}

std::uint64_t Value(std::uint64_t writer, std::uint64_t round, std::uint64_t index) {
  return (writer + 1) * 1000003 + round * 7919 + index;
}

// A value written on one node is read on every other after a barrier, and after a lock handoff.
void Visibility() {
  constexpr std::size_t kWords = 3000;  // several pages
  auto* data = Var<std::uint64_t>("visibility", kWords);
  for (int writer = 0; writer < size_; ++writer) {
    for (std::uint64_t round = 0; round < 3; ++round) {
      if (rank_ == writer) {
        for (std::size_t i = 0; i < kWords; ++i) data[i] = Value(writer, round, i);
      }
      Barrier();
      for (std::size_t i = 0; i < kWords; ++i) {
        if (data[i] != Value(writer, round, i)) {
          Die("after a barrier, word " + std::to_string(i) + " written by rank " +
              std::to_string(writer) + " reads " + std::to_string(data[i]));
        }
      }
      Barrier();
    }
  }
  // A baton passes through the ranks under a lock; each holder checks the previous one's words.
  auto* baton = Var<std::int64_t>("baton", 1 + kWords);
  for (int turn = 0; turn < 2 * size_; ++turn) {
    if (turn % size_ != rank_) continue;
    for (;;) {
      lmdx_lock("baton_lock");
      if (baton[0] == turn) break;
      lmdx_unlock("baton_lock");
      std::this_thread::yield();
    }
    for (std::size_t i = 0; i < kWords && turn > 0; ++i) {
      Check(baton[1 + i] == (turn - 1) * 100000 + static_cast<std::int64_t>(i),
            "after a lock handoff, word " + std::to_string(i) + " is stale");
    }
    for (std::size_t i = 0; i < kWords; ++i)
      baton[1 + i] = turn * 100000 + static_cast<std::int64_t>(i);
    baton[0] = turn + 1;
    lmdx_unlock("baton_lock");
  }
  Barrier();
  Check(baton[0] == 2 * size_, "the baton went " + std::to_string(baton[0]) + " turns");
}

// Threads on every node increment one shared counter under a lock; the total is exact.
void Counter(int threads, int total) {
  auto* counter = Var<std::int64_t>("counter", 1);
  int per_thread = total / (size_ * threads);
  Check(per_thread * size_ * threads == total, "TOTAL must divide evenly");
  Barrier();
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([per_thread, counter] {
      for (int i = 0; i < per_thread; ++i) {
        lmdx_lock("counter_lock");
        *counter = *counter + 1;
        lmdx_unlock("counter_lock");
      }
    });
  }
  for (auto& worker : workers) worker.join();
  Barrier();
  Check(*counter == total,
        "the counter is " + std::to_string(*counter) + ", not " + std::to_string(total));
}

// Nodes write disjoint words of one page, many times; every word ends right.
void FalseSharing(int rounds) {
  constexpr std::size_t kWords = 512;  // one 4 KiB page
  auto* page = Var<std::uint64_t>("false_sharing", kWords);
  for (int round = 1; round <= rounds; ++round) {
    for (std::size_t i = static_cast<std::size_t>(rank_); i < kWords;
         i += static_cast<std::size_t>(size_)) {
      page[i] = page[i] + i + 1;  // a read and a write of this node's own word
    }
    if (round % 20 == 0) Barrier();  // so that the page moves between the nodes many times
  }
  Barrier();
  for (std::size_t i = 0; i < kWords; ++i) {
    Check(page[i] == static_cast<std::uint64_t>(rounds) * (i + 1),
          "word " + std::to_string(i) + " is " + std::to_string(page[i]));
  }
}

struct Block {
  std::uint64_t* start;
  std::size_t words;
  std::uint64_t tag;
};

void Fill(const Block& block) {
  for (std::size_t i = 0; i < block.words; ++i)
    block.start[i] = block.tag ^ (i * 0x9E3779B97F4A7C15ull);
}

void Verify(const Block& block, const char* when) {
  for (std::size_t i = 0; i < block.words; ++i) {
    if (block.start[i] != (block.tag ^ (i * 0x9E3779B97F4A7C15ull))) {
      Die(std::string("block ") + std::to_string(block.tag) + " overwritten " + when + " at word " +
          std::to_string(i));
    }
  }
}

// Allocations and frees of random sizes from every node: live blocks never overlap (each keeps
// its pattern), blocks freed by another node, and memory is reused after free.
void Heap(int operations) {
  std::mt19937_64 random(static_cast<std::uint64_t>(rank_) * 7 + 1);
  std::vector<Block> live;
  std::uint64_t next_tag = static_cast<std::uint64_t>(rank_) << 40;
  int per_node = operations / size_;
  for (int op = 0; op < per_node; ++op) {
    bool allocate = live.size() < 64 && (live.empty() || random() % 3 != 0);
    if (allocate) {
      std::size_t bytes = random() % 16 == 0 ? 1 + random() % (256 << 10) : 1 + random() % 2048;
      auto* start = static_cast<std::uint64_t*>(lmdx_malloc(bytes));
      Check(start != nullptr, "lmdx_malloc(" + std::to_string(bytes) + ")");
      Check(lmdx_is_shared(start) == 1, "lmdx_malloc returned private memory");
      Block block{start, bytes / sizeof(std::uint64_t), next_tag++};
      Fill(block);
      live.push_back(block);
    } else {
      std::size_t victim = random() % live.size();
      Verify(live[victim], "before its free");
      lmdx_free(live[victim].start);
      live[victim] = live.back();
      live.pop_back();
    }
  }
  for (const Block& block : live) Verify(block, "at the end");

  // Publish the live blocks; rank 0 checks no two overlap across all nodes.
  constexpr std::size_t kMaxLive = 64;
  auto* table = Var<std::uint64_t>("heap_table", static_cast<std::size_t>(size_) * kMaxLive * 2);
  std::uint64_t* mine = table + static_cast<std::size_t>(rank_) * kMaxLive * 2;
  for (std::size_t i = 0; i < kMaxLive; ++i) {
    mine[2 * i] = i < live.size() ? reinterpret_cast<std::uintptr_t>(live[i].start) : 0;
    mine[2 * i + 1] =
        i < live.size() ? reinterpret_cast<std::uintptr_t>(live[i].start + live[i].words) : 0;
  }
  Barrier();
  if (rank_ == 0) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
    for (std::size_t i = 0; i < static_cast<std::size_t>(size_) * kMaxLive; ++i) {
      if (table[2 * i] != 0) all.emplace_back(table[2 * i], table[2 * i + 1]);
    }
    std::sort(all.begin(), all.end());
    for (std::size_t i = 1; i < all.size(); ++i) {
      Check(all[i].first >= all[i - 1].second, "two live blocks overlap");
    }
  }
  Barrier();
  // Every node frees the blocks of the next node: frees from another node.
  int next = (rank_ + 1) % size_;
  const std::uint64_t* theirs = table + static_cast<std::size_t>(next) * kMaxLive * 2;
  for (std::size_t i = 0; i < kMaxLive; ++i) {
    if (theirs[2 * i] != 0) lmdx_free(reinterpret_cast<void*>(theirs[2 * i]));
  }
  Barrier();
  // Reuse: the same sizes allocated again after a free land on addresses already used.
  std::vector<void*> first;
  first.reserve(256);
  for (int i = 0; i < 256; ++i) first.push_back(lmdx_malloc(4096));
  for (void* block : first) lmdx_free(block);
  int reused = 0;
  for (int i = 0; i < 256; ++i) {
    void* again = lmdx_malloc(4096);
    if (std::find(first.begin(), first.end(), again) != first.end()) ++reused;
    lmdx_free(again);
  }
  Check(reused >= 128, "only " + std::to_string(reused) + " of 256 blocks reused freed memory");
  // A double free is reported, not obeyed.
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  void* block = lmdx_malloc(100);
  lmdx_free(block);
  lmdx_free(block);
  Check(lmdx_last_error() == LMDX_ERR_MISUSE, "a double free was not reported");
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  Barrier();
}

// Every node creates the same variable at once: one variable results. Another size is an error.
void Names() {
  auto* addresses = Var<std::uint64_t>("addresses", static_cast<std::size_t>(size_));
  Barrier();
  void* raced = lmdx_shared_var("raced", 12345);
  Check(raced != nullptr, "lmdx_shared_var raced");
  addresses[rank_] = reinterpret_cast<std::uintptr_t>(raced);
  static_cast<char*>(raced)[rank_] = static_cast<char>('a' + rank_);
  Barrier();
  for (int r = 0; r < size_; ++r) {
    Check(addresses[r] == reinterpret_cast<std::uintptr_t>(raced),
          "rank " + std::to_string(r) + " got another address: " + std::to_string(addresses[r]) +
              " instead of " + std::to_string(reinterpret_cast<std::uintptr_t>(raced)));
    Check(static_cast<char*>(raced)[r] == 'a' + r, "a byte of the raced variable is lost");
  }
  std::size_t bytes = 0;
  Check(lmdx_lookup("raced", &bytes) == raced && bytes == 12345, "lmdx_lookup of raced");
  Check(lmdx_lookup("never_created", &bytes) == nullptr, "lmdx_lookup of a missing name");
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  Check(lmdx_shared_var("raced", 100) == nullptr, "another size was accepted");
  std::string text = lmdx_last_error_message();
  Check(lmdx_last_error() == LMDX_ERR_MISUSE, "another size: wrong code");
  Check(text.find("12345") != std::string::npos && text.find("100 bytes") != std::string::npos,
        "another size: the message does not name both sizes: " + text);
  if (rank_ == 0) std::printf("size mismatch: %s\n", text.c_str());
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  // Collective allocations: the same pointer everywhere (addresses is reused once all have
  // checked it).
  Barrier();
  void* collective = lmdx_alloc_collective(10000);
  addresses[rank_] = reinterpret_cast<std::uintptr_t>(collective);
  Barrier();
  for (int r = 0; r < size_; ++r) {
    Check(addresses[r] == reinterpret_cast<std::uintptr_t>(collective),
          "lmdx_alloc_collective gave rank " + std::to_string(r) + " another pointer");
  }
  Barrier();
}

// lmdx_get and lmdx_put agree with direct loads and stores, across page boundaries.
void GetPut() {
  constexpr std::size_t kBytes = 5 * 4096 + 123;
  auto* area = Var<unsigned char>("getput", kBytes);
  std::vector<unsigned char> pattern(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<unsigned char>(i * 31 + 7);
  for (int writer = 0; writer < size_; ++writer) {
    if (rank_ == writer) {
      // A put at an odd offset spanning pages; the rest by direct stores.
      std::size_t offset = 1000 + static_cast<std::size_t>(writer);
      for (std::size_t i = 0; i < offset; ++i)
        area[i] = static_cast<unsigned char>(pattern[i] ^ writer);
      std::vector<unsigned char> shifted(kBytes - offset);
      for (std::size_t i = offset; i < kBytes; ++i)
        shifted[i - offset] = static_cast<unsigned char>(pattern[i] ^ writer);
      Check(lmdx_put(area + offset, shifted.data(), shifted.size()) == LMDX_OK, "lmdx_put");
    }
    Barrier();
    std::vector<unsigned char> got(kBytes);
    Check(lmdx_get(got.data(), area, kBytes) == LMDX_OK, "lmdx_get");
    for (std::size_t i = 0; i < kBytes; ++i) {
      unsigned char expected = static_cast<unsigned char>(pattern[i] ^ writer);
      Check(got[i] == expected, "lmdx_get byte " + std::to_string(i));
      Check(area[i] == expected, "direct read byte " + std::to_string(i));
    }
    Barrier();
  }
  // Shared to shared: a get into shared memory and a message received into shared memory.
  auto* copy = Var<unsigned char>("getput_copy", kBytes);
  if (rank_ == size_ - 1) Check(lmdx_get(copy, area, kBytes) == LMDX_OK, "lmdx_get shared->shared");
  Barrier();
  Check(std::memcmp(copy, area, kBytes) == 0, "a shared-to-shared get differs");
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  unsigned char local[8];
  Check(lmdx_get(local, local, sizeof local) == LMDX_ERR_INVALID_ARGUMENT,
        "lmdx_get from private memory was accepted");
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  Barrier();
}

// lmdx_read and lmdx_write on shared buffers whose pages other nodes home and write: each rank in
// turn reads a file it wrote into the variable at an odd offset (while other nodes hold copies,
// so pages here are read-only or absent), everyone checks the bytes with loads, and every rank
// writes the variable out to a file of its own and compares it with what it expects. Then a
// short read at the end of a file, and a bad descriptor.
std::string ScratchFile(const std::string& what) {
  const char* directory = std::getenv("TEST_TMPDIR");
  return std::string(directory != nullptr ? directory : "/tmp") + "/lmdx_file_io_" + what + "_" +
         std::to_string(::getpid());
}

void FileIo() {
  constexpr std::size_t kBytes = 9 * 4096 + 77;
  auto* area = Var<unsigned char>("file_io", kBytes);
  std::vector<unsigned char> pattern(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<unsigned char>(i * 13 + 5);
  for (int reader = 0; reader < size_; ++reader) {
    auto expected = [&](std::size_t i) { return static_cast<unsigned char>(pattern[i] ^ reader); };
    // Every node holds copies of the whole variable before the reader's turn.
    std::size_t sum = 0;
    for (std::size_t i = 0; i < kBytes; i += 512) sum += area[i];
    Check(sum < ~std::size_t{0}, "a read of every page");
    Barrier();
    if (rank_ == reader) {
      std::size_t offset = 333 + static_cast<std::size_t>(reader);
      std::vector<unsigned char> bytes(kBytes - offset);
      for (std::size_t i = offset; i < kBytes; ++i) bytes[i - offset] = expected(i);
      std::string path = ScratchFile("in");
      int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
      Check(fd >= 0, "open " + path);
      Check(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()),
            "write the input file");
      Check(::lseek(fd, 0, SEEK_SET) == 0, "lseek");
      for (std::size_t i = 0; i < offset; ++i) area[i] = expected(i);
      ssize_t got = lmdx_read(fd, area + offset, bytes.size());
      Check(got == static_cast<ssize_t>(bytes.size()),
            "lmdx_read returned " + std::to_string(got) + " of " + std::to_string(bytes.size()));
      // At the end of the file: 0, as read(2) says.
      Check(lmdx_read(fd, area, 100) == 0, "lmdx_read at the end of the file");
      ::close(fd);
      ::unlink(path.c_str());
    }
    Barrier();
    for (std::size_t i = 0; i < kBytes; ++i) {
      if (area[i] != expected(i)) Check(false, "byte " + std::to_string(i) + " after lmdx_read");
    }
    std::string path = ScratchFile("out");
    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
    Check(fd >= 0, "open " + path);
    Check(lmdx_write(fd, area, kBytes) == static_cast<ssize_t>(kBytes), "lmdx_write");
    std::vector<unsigned char> back(kBytes + 1);
    Check(::pread(fd, back.data(), back.size(), 0) == static_cast<ssize_t>(kBytes),
          "the file lmdx_write wrote has another size");
    for (std::size_t i = 0; i < kBytes; ++i) {
      if (back[i] != expected(i)) Check(false, "byte " + std::to_string(i) + " of lmdx_write");
    }
    // A short file: lmdx_read returns what there is.
    Check(::ftruncate(fd, 100) == 0 && ::lseek(fd, 0, SEEK_SET) == 0, "truncate");
    if (rank_ == reader) Check(lmdx_read(fd, area, kBytes) == 100, "a short lmdx_read");
    ::close(fd);
    ::unlink(path.c_str());
    Barrier();
    // The 100 bytes the reader took back from its file are its own writes again.
    for (std::size_t i = 0; i < 100; ++i) Check(area[i] == expected(i), "the short read's bytes");
    Barrier();
  }
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  char private_buffer[16];
  Check(lmdx_read(-1, private_buffer, sizeof private_buffer) == -1 && errno == EBADF,
        "lmdx_read on a bad descriptor");
  Check(lmdx_read(-1, area, 16) == -1 && errno == EBADF, "lmdx_read into shared memory, bad fd");
  int fd = ::open("/dev/zero", O_RDONLY);
  Check(lmdx_read(fd, private_buffer, 8) == 8, "a read into private memory");
  ::close(fd);
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  Barrier();
}

// The C++ API: lmdx::shared<T> and lmdx::allocator<T>.
void Cpp() {
  lmdx::shared<double[64][64]> grid{"grid"};
  for (int i = rank_; i < 64; i += size_) {
    for (int j = 0; j < 64; ++j) grid[i][j] = i * 64 + j + 0.5;
  }
  Barrier();
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) Check(grid[i][j] == i * 64 + j + 0.5, "grid element");
  }
  std::vector<int, lmdx::allocator<int>> numbers;
  // Growing without reserve on purpose: every reallocation allocates and frees shared memory.
  for (int i = 0; i < 10000; ++i) numbers.push_back(i * rank_);  // NOLINT(performance-*)
  Check(lmdx_is_shared(numbers.data()) == 1, "the vector's elements are not in shared memory");
  for (int i = 0; i < 10000; ++i) Check(numbers[i] == i * rank_, "vector element");
  Barrier();
}

// Threads of one node reading the same remote pages at once: each page is fetched once (the
// statistics say how many fetches the node made; the test reads them).
void OneFetch(int pages, int threads) {
  auto** pointer = static_cast<char**>(lmdx_shared_var("one_fetch_pointer", sizeof(char*)));
  if (rank_ == 0) {
    auto* area = static_cast<char*>(lmdx_malloc(static_cast<std::size_t>(pages) * 4096));
    for (int i = 0; i < pages; ++i) area[static_cast<std::size_t>(i) * 4096] = static_cast<char>(i);
    *pointer = area;
  }
  Barrier();
  if (rank_ == 1) {
    char* area = *pointer;
    std::atomic<int> ready{0};
    std::vector<std::thread> readers;
    readers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      readers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        for (int k = 0; k < pages; ++k) {
          int i = (k + t * 7) % pages;  // threads meet on pages in different orders
          Check(area[static_cast<std::size_t>(i) * 4096] == static_cast<char>(i), "page contents");
        }
      });
    }
    for (auto& reader : readers) reader.join();
  }
  Barrier();
}

// A variable of `pages` pages whose homes alternate (run with LMDX_DSM_HOME=cyclic): every node
// writes the pages it is home of, so its valid and invalid pages alternate page by page, more
// runs than the kernel allows mappings in a process (65,530) when pages is 140,000.
void Scattered(std::size_t pages) {
  constexpr std::size_t kWordsPerPage = 4096 / sizeof(std::uint64_t);
  auto* data = Var<std::uint64_t>("scattered", pages * kWordsPerPage);
  auto stamp = [](std::size_t page) { return std::uint64_t{page} * 2654435761u + 17; };
  for (std::size_t page = static_cast<std::size_t>(rank_); page < pages;
       page += static_cast<std::size_t>(size_)) {
    data[page * kWordsPerPage] = stamp(page);
    data[page * kWordsPerPage + kWordsPerPage - 1] = stamp(page) + 1;
  }
  Barrier();
  // Every node reads a spread of every other node's pages, and all of its own again.
  for (std::size_t page = 0; page < pages; ++page) {
    bool own = page % static_cast<std::size_t>(size_) == static_cast<std::size_t>(rank_);
    if (!own && page % 101 != 0) continue;
    Check(data[page * kWordsPerPage] == stamp(page) &&
              data[page * kWordsPerPage + kWordsPerPage - 1] == stamp(page) + 1,
          "page " + std::to_string(page) + " of the scattered variable");
  }
  Barrier();
}

// Every page of a `pages`-page variable written by its home and read by every node, in `rounds`
// rounds (run with LMDX_DSM_HOME=cyclic). On 2 nodes a node's own pages and the other's
// alternate, each page a run of its own protection: under mprotect, 140,000 pages are more runs
// than the kernel allows a process mappings (65,530), so pages are closed and opened again while
// the protocol moves them. Shared memory is compared with the same writes made, one after
// another, in private memory.
void EveryPage(std::size_t pages, int rounds) {
  constexpr std::size_t kWordsPerPage = 4096 / sizeof(std::uint64_t);
  // Words 0, 73, ..., 511 of each page: its first and last, and some between.
  constexpr std::size_t kStride = 73;
  constexpr std::size_t kSamples = (kWordsPerPage - 1) / kStride + 1;
  auto* data = Var<std::uint64_t>("every_page", pages * kWordsPerPage);
  auto word_of = [](std::size_t sample) { return std::min(sample * kStride, kWordsPerPage - 1); };
  auto value = [](std::size_t page, std::size_t sample, int round) {
    return (std::uint64_t{page} * 2654435761u) ^ (sample << 40) ^ (std::uint64_t(round) << 56);
  };
  std::vector<std::uint64_t> reference(pages * kSamples, 0);
  for (int round = 1; round <= rounds; ++round) {
    for (std::size_t page = static_cast<std::size_t>(rank_); page < pages;
         page += static_cast<std::size_t>(size_)) {
      for (std::size_t sample = 0; sample < kSamples; ++sample) {
        data[page * kWordsPerPage + word_of(sample)] = value(page, sample, round);
      }
    }
    // The sequential program: every page's writes, by one writer, in private memory.
    for (std::size_t page = 0; page < pages; ++page) {
      for (std::size_t sample = 0; sample < kSamples; ++sample) {
        reference[page * kSamples + sample] = value(page, sample, round);
      }
    }
    Barrier();
    // Every page, ascending in odd rounds and descending in even ones, so that the pages read
    // last in one are read first in the next.
    for (std::size_t at = 0; at < pages; ++at) {
      std::size_t page = round % 2 == 1 ? at : pages - 1 - at;
      for (std::size_t sample = 0; sample < kSamples; ++sample) {
        std::uint64_t seen = data[page * kWordsPerPage + word_of(sample)];
        if (seen != reference[page * kSamples + sample]) {
          Die("round " + std::to_string(round) + ": word " + std::to_string(word_of(sample)) +
              " of page " + std::to_string(page) + " (home rank " +
              std::to_string(page % static_cast<std::size_t>(size_)) + ") reads " +
              std::to_string(seen) + ", not " +
              std::to_string(reference[page * kSamples + sample]));
        }
      }
      if (data[page * kWordsPerPage + 1] != 0) {
        Die("word 1 of page " + std::to_string(page) + " was never written but is not zero");
      }
    }
    Barrier();
  }
}

// User-level threads of one node, some reading a page through lmdx_get and some through plain
// loads, while another node keeps writing it: an explicit access waiting for the page must not
// leave a sibling's fault waiting on the same worker forever. Values only grow (sc).
struct FiberReader {
  volatile std::uint64_t* word = nullptr;
  int rounds = 0;
  bool explicit_access = false;
};

void* ReadGrowing(void* argument) {
  const auto* reader = static_cast<const FiberReader*>(argument);
  std::uint64_t last = 0;
  for (int i = 0; i < reader->rounds; ++i) {
    std::uint64_t value = 0;
    if (reader->explicit_access) {
      Check(lmdx_get(&value, const_cast<std::uint64_t*>(reader->word), sizeof value) == LMDX_OK,
            "lmdx_get");
    } else {
      value = *reader->word;
    }
    Check(value >= last,
          "a read went back from " + std::to_string(last) + " to " + std::to_string(value));
    last = value;
  }
  return nullptr;
}

void FibersSharingAPage(int rounds, int threads) {
  auto* word = Var<std::uint64_t>("fibers_word", 1);
  Barrier();
  if (rank_ == 0) {
    // Each write takes the page back from the readers' node (under sc, update and rc).
    for (std::uint64_t value = 1; value <= static_cast<std::uint64_t>(rounds); ++value) {
      Check(lmdx_put(word, &value, sizeof value) == LMDX_OK, "lmdx_put");
    }
  } else if (rank_ == 1) {
    std::vector<FiberReader> readers(static_cast<std::size_t>(threads));
    std::vector<lmdx_thread_t> started;
    for (int t = 0; t < threads; ++t) {
      FiberReader& reader = readers[static_cast<std::size_t>(t)];
      reader = {word, rounds, t % 2 == 0};
      started.push_back(lmdx_start_thread_on(rank_, &ReadGrowing, &reader));
    }
    for (lmdx_thread_t thread : started) lmdx_join_thread(thread);
  }
  Barrier();
  Check(*word == static_cast<std::uint64_t>(rounds), "the last write after the barrier");
  Barrier();
}

// A fault outside shared memory stays an ordinary crash.
void Crash(const char* where) {
  Barrier();
  if (rank_ == size_ - 1) {
    volatile int* bad = nullptr;
    if (std::strcmp(where, "unmapped_variable_area") == 0) {
      // Inside the global range, but in no variable: not shared data either.
      auto* var = static_cast<char*>(lmdx_shared_var("small", 8));
      bad = reinterpret_cast<volatile int*>(var + (std::uint64_t{1} << 30));
    } else if (std::strcmp(where, "past_the_end") == 0) {
      // The page after the last variable's: an index that ran past its end.
      auto* var = static_cast<char*>(lmdx_shared_var("last", 100));
      bad = reinterpret_cast<volatile int*>(var + 8192);
    } else if (std::strcmp(where, "into_the_next") == 0) {
      // An index one page and 8 bytes past the end of a variable of whole pages: without guard
      // pages, that is the next variable's ninth byte.
      auto* first = static_cast<char*>(lmdx_shared_var("guarded_first", 4096));
      auto* second = static_cast<char*>(lmdx_shared_var("guarded_second", 4096));
      std::printf("rank %d: the second variable starts %td bytes after the first\n", rank_,
                  second - first);
      bad = reinterpret_cast<volatile int*>(first + 4096 + 8);
    } else {
      bad = reinterpret_cast<volatile int*>(16);
    }
    std::printf("rank %d touches %p\n", rank_, const_cast<int*>(bad));
    std::fflush(stdout);
    *bad = 1;
    Die("survived a wild write");
  }
  Barrier();
}

// Each node fills its own band of pages first, then every node reads every band (run with
// LMDX_DSM_HOME=first_touch): under the home-based protocols the first toucher becomes the home,
// so the writers write in place (the test reads their statistics: no twin, no diff).
void FirstTouchBands(int pages_per_node) {
  const std::size_t words_per_page = 4096 / sizeof(std::uint64_t);
  const std::size_t band = static_cast<std::size_t>(pages_per_node) * words_per_page;
  auto* data = Var<std::uint64_t>("first_touch_bands", band * static_cast<std::size_t>(size_));
  for (std::size_t i = 0; i < band; ++i) {
    data[static_cast<std::size_t>(rank_) * band + i] =
        Value(static_cast<std::uint64_t>(rank_), 1, i);
  }
  Barrier();
  for (int owner = 0; owner < size_; ++owner) {
    for (std::size_t i = 0; i < band; ++i) {
      std::uint64_t got = data[static_cast<std::size_t>(owner) * band + i];
      Check(got == Value(static_cast<std::uint64_t>(owner), 1, i),
            "word " + std::to_string(i) + " of rank " + std::to_string(owner) + "'s band reads " +
                std::to_string(got));
    }
  }
  Barrier();
}

// Run on 2 nodes: rank 0 writes `pages` pages homed on rank 1 and, with no barrier after, the two
// ranks take turns under a lock `turns` times, each adding to a shared count. Under hlrc and lrc
// every grant would carry rank 0's notices of those pages, since the last barrier; a grant leaves
// out what its acquirer already knows, so after the first the notices are not sent again (the
// test reads the lock grants' bytes).
void LockNotices(int pages, int turns) {
  Check(size_ == 2, "lock_notices runs on 2 nodes");
  const std::size_t words_per_page = 4096 / sizeof(std::uint64_t);
  const std::size_t total = 2 * static_cast<std::size_t>(pages) * words_per_page;
  auto* data = Var<std::uint64_t>("lock_notices_data", total);  // block homes: second half on 1
  auto* state = Var<std::uint64_t>("lock_notices_state", 2);    // turn, count
  Barrier();
  if (rank_ == 0) {
    for (std::size_t i = total / 2; i < total; i += words_per_page) data[i] = Value(0, 2, i);
  }
  for (int turn = rank_; turn < turns; turn += 2) {
    for (;;) {
      Check(lmdx_lock("lock_notices") == LMDX_OK, "lmdx_lock");
      if (state[0] == static_cast<std::uint64_t>(turn)) break;
      Check(lmdx_unlock("lock_notices") == LMDX_OK, "lmdx_unlock");
    }
    state[1] += static_cast<std::uint64_t>(turn);
    state[0] = static_cast<std::uint64_t>(turn) + 1;
    if (rank_ == 1 && turn == 1) {
      for (std::size_t i = total / 2; i < total; i += words_per_page) {
        Check(data[i] == Value(0, 2, i), "page " + std::to_string(i / words_per_page) +
                                             " written by rank 0 before the lock reads " +
                                             std::to_string(data[i]));
      }
    }
    Check(lmdx_unlock("lock_notices") == LMDX_OK, "lmdx_unlock");
  }
  Barrier();
  std::uint64_t expected = static_cast<std::uint64_t>(turns) * (turns - 1) / 2;
  Check(state[1] == expected, "the count under the lock is " + std::to_string(state[1]) +
                                  " instead of " + std::to_string(expected));
  Barrier();
}

// The shared heap runs its own protocol (dsm.heap) beside the variables' default: rank 0 says
// which protocol keeps each, then every node writes its word of a heap block made by rank 0.
void HeapProtocol() {
  auto* where = Var<std::uint64_t*>("heap_protocol_block", 1);
  if (rank_ == 0) {
    *where = static_cast<std::uint64_t*>(lmdx_malloc(static_cast<std::size_t>(size_) * 8));
    Check(*where != nullptr, "lmdx_malloc");
    std::printf("heap block: %s, variable: %s\n", lmdx_protocol_of(*where),
                lmdx_protocol_of(where));
  }
  Barrier();
  std::uint64_t* block = *where;
  block[rank_] = Value(static_cast<std::uint64_t>(rank_), 0, 0);
  Barrier();
  for (int r = 0; r < size_; ++r) {
    Check(block[r] == Value(static_cast<std::uint64_t>(r), 0, 0),
          "heap word of rank " + std::to_string(r));
  }
  Barrier();
}

// Run on 3 nodes under sc. Rank 2 owns the only page of a variable homed on rank 0, then dies.
// Rank 1's lmdx_get is granted a fetch from rank 2, which fails; the home must not keep the
// page's directory entry locked for that failed transaction: rank 0's own lmdx_get afterwards
// fails too, promptly, instead of waiting for a transaction that will never end.
void LostOwner() {
  constexpr int kVictim = 2;
  Check(size_ == 3, "lost_owner runs on 3 nodes");
  auto* data = Var<std::uint64_t>("lost_owner", 8);
  if (rank_ == kVictim) data[0] = 42;
  Barrier();
  if (rank_ == kVictim) {
    std::thread([] {
      ::usleep(100 * 1000);
      ::raise(SIGKILL);
    }).detach();
    for (;;) ::pause();
  }
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  ::usleep(400 * 1000);  // rank 2 is gone by now
  std::uint64_t value = 0;
  char token = 'x';
  if (rank_ == 1) {
    int code = lmdx_get(&value, data, sizeof value);
    std::printf("rank 1: get from the lost owner returned %s\n", lmdx_strerror(code));
    std::fflush(stdout);
    Check(lmdx_send(0, &token, 1) == LMDX_OK, "lmdx_send to rank 0");
  } else {
    Check(lmdx_recv(1, &token, 1, nullptr) == LMDX_OK, "lmdx_recv from rank 1");
    int code = lmdx_get(&value, data, sizeof value);
    std::printf("rank 0: get after the failed transaction returned %s\n", lmdx_strerror(code));
    std::fflush(stdout);
  }
  std::_Exit(3);
}

}  // namespace

int Run(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  rank_ = lmdx_rank();
  size_ = lmdx_size();
  std::string scenario = argc > 1 ? argv[1] : "";
  auto number = [&](int index, int fallback) {
    return argc > index ? std::atoi(argv[index]) : fallback;
  };
  if (scenario == "visibility") {
    Visibility();
  } else if (scenario == "counter") {
    Counter(number(2, 2), number(3, 10000));
  } else if (scenario == "false_sharing") {
    FalseSharing(number(2, 200));
  } else if (scenario == "heap") {
    Heap(number(2, 100000));
  } else if (scenario == "names") {
    Names();
  } else if (scenario == "file_io") {
    FileIo();
  } else if (scenario == "getput") {
    GetPut();
  } else if (scenario == "one_fetch") {
    OneFetch(number(2, 200), number(3, 4));
  } else if (scenario == "cpp") {
    Cpp();
  } else if (scenario == "fibers_getput") {
    FibersSharingAPage(number(2, 2000), number(3, 6));
  } else if (scenario == "scattered") {
    Scattered(static_cast<std::size_t>(number(2, 140000)));
  } else if (scenario == "every_page") {
    EveryPage(static_cast<std::size_t>(number(2, 140000)), number(3, 2));
  } else if (scenario == "lock_notices") {
    LockNotices(number(2, 600), number(3, 200));
  } else if (scenario == "first_touch_bands") {
    FirstTouchBands(number(2, 16));
  } else if (scenario == "heap_protocol") {
    HeapProtocol();
  } else if (scenario == "lost_owner") {
    LostOwner();
  } else if (scenario == "crash") {
    Crash(argc > 2 ? argv[2] : "null");
  } else {
    Die("unknown scenario '" + scenario + "'");
  }
  if (rank_ == 0) std::printf("verified: %s on %d nodes\n", scenario.c_str(), size_);
  lmdx_finalize();
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "lost_owner") {
    // The survivors hold the launcher's SIGTERM back long enough to say what their calls
    // returned; blocked before lmdx_init so that the runtime's threads inherit the mask.
    const char* rank_text = std::getenv("LMDX_RANK");
    if (rank_text != nullptr && std::atoi(rank_text) != 2) {
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &term, nullptr);
    }
  }
  try {
    return Run(argc, argv);
  } catch (const std::exception& error) {
    Die(std::string("exception: ") + error.what());
  }
}
