// Synthetic sharing patterns under the job's protocol, one pattern per run: the second table of
// `lmdx bench protocols`, which shows each protocol on the kind of sharing it was made for (or
// against), where the samples mix several kinds. SPMD, any number of nodes:
//
//   lmdx run bazel-bin/benchmarks/protocols/patterns -n 4 --protocol lrc --stats -- PATTERN [K]
//
//   prodcons       node 0 fills a page each round, every other node reads the page of the round
//                  before (two pages in turn, so producing and consuming overlap); one barrier
//                  per round hands them over
//   migratory      a 1 KiB record, alone on its page, taken K times by every node in turn (a ring
//                  of semaphores passes the turn) under one lock; each holder reads, modifies and
//                  writes all of it
//   false-sharing  every node writes its own slice of one page, a barrier, every node reads the
//                  whole page, a barrier
//   read-mostly    every node reads a 64 KiB table every iteration; every 25th iteration node 0
//                  changes 4 of its words (in 4 pages) between two barriers
//   neighbour      Jacobi-like: each node owns a band of 8 pages (rows) of a grid, homed where
//                  it is written, and reads the boundary pages of the bands beside it each
//                  iteration; one barrier per iteration
//
// Every pattern is data-race free (each conflicting pair of accesses is ordered by a barrier or
// the lock), so every protocol must give what a sequential run gives. Every node keeps that
// sequential result in private memory and compares what it reads with it: the first difference
// ends the job with status 1 and a line naming the pattern, the rank, the iteration, the word, the
// expected and the actual value. Rank 0 prints the time, from a barrier after the set-up to the
// last barrier of the pattern:
//
//   patterns: PATTERN, K iterations on N nodes, protocol P: 0.123 s (0.123 ms per iteration)
//   verified
//
// --wrong-result spoils one value the pattern shares, so that the check can be seen to catch it.
#include <lmdx/lmdx.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

using Word = std::uint64_t;
constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kPageWords = kPageBytes / sizeof(Word);

int rank_ = 0;
int size_ = 1;
const char* pattern_ = "";
bool wrong_result_ = false;

[[noreturn]] void Mismatch(const std::string& where, const std::string& expected,
                           const std::string& got) {
  std::printf("patterns: %s: rank %d: %s: expected %s, got %s\n", pattern_, rank_, where.c_str(),
              expected.c_str(), got.c_str());
  std::fflush(stdout);
  lmdx_abort(1, "the result differs from a sequential run");
  std::abort();
}

[[noreturn]] void Mismatch(const std::string& where, Word expected, Word got) {
  Mismatch(where, std::to_string(expected), std::to_string(got));
}

// A value that names where and when it was written, so that a stale or misplaced word cannot
// pass for the right one.
Word Value(std::uint64_t a, std::uint64_t b, std::uint64_t salt) {
  std::uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + salt * 0xD1B54A32D192ED03ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return (x ^ (x >> 31)) | 1;  // never the initial zero
}

// Every pattern's data starts a page of its own, so that the sharing is the pattern's and
// nothing else's.
template <typename T>
T* Shared(const char* name, std::size_t count) {
  void* data = lmdx_shared_var(name, count * sizeof(T));
  if (data == nullptr || reinterpret_cast<std::uintptr_t>(data) % kPageBytes != 0) {
    lmdx_abort(
        2, (std::string("shared variable ") + name + " is missing or not page aligned").c_str());
    std::abort();  // lmdx_abort ends the job; this tells the compiler so
  }
  return static_cast<T*>(data);
}

void Barrier() { lmdx_barrier_all(); }

std::string At(const char* unit, int iteration, std::size_t word) {
  return std::string(unit) + " " + std::to_string(iteration) + ", word " + std::to_string(word);
}

// What a pattern hands back to main: its timed span, the data it shares (whose protocol the
// result line names) and, optionally, a line about how it went.
struct Outcome {
  double seconds = 0;
  const void* data = nullptr;
  std::string note;
};

class Stopwatch {
 public:
  void Start() { start_ = std::chrono::steady_clock::now(); }
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// ---- prodcons ---------------------------------------------------------------------------------

Outcome Prodcons(int rounds) {
  Word* pages = Shared<Word>("patterns.prodcons", 2 * kPageWords);
  const bool producer = rank_ == 0;
  const bool consumer = rank_ != 0 || size_ == 1;  // alone, node 0 reads back its own pages
  Barrier();
  Stopwatch clock;
  clock.Start();
  // Round k fills page k % 2 while the consumers read page (k - 1) % 2; the producer writes a
  // page again only after the barrier that follows every read of it.
  for (int k = 0; k <= rounds; ++k) {
    if (producer && k < rounds) {
      Word* page = pages + (k % 2) * kPageWords;
      for (std::size_t i = 0; i < kPageWords; ++i) page[i] = Value(k, i, 1);
      if (wrong_result_ && k == rounds - 1) page[7] += 1;
    }
    if (consumer && k > 0) {
      const Word* page = pages + ((k - 1) % 2) * kPageWords;
      for (std::size_t i = 0; i < kPageWords; ++i) {
        const Word expected = Value(k - 1, i, 1);
        if (page[i] != expected) Mismatch(At("round", k - 1, i), expected, page[i]);
      }
    }
    Barrier();
  }
  return {clock.Seconds(), pages, ""};
}

// ---- migratory --------------------------------------------------------------------------------

// The record: turns taken, the last holder (rank + 1), how many turns changed node, then data.
constexpr std::size_t kTurns = 0, kHolder = 1, kMoves = 2, kData = 3;
constexpr std::size_t kRecordWords = 128;

Outcome Migratory(int rounds) {
  Word* record = Shared<Word>("patterns.migratory", kPageWords);
  lmdx_lock_t lock = lmdx_lock_find("patterns.migratory.lock");
  // The lock alone does not make the record migrate: a node that unlocks and locks again before
  // another's request reaches it keeps the lock (on 2 nodes here, 1 to 44 of 1,000 turns changed
  // node), and a barrier per round still lets the round's last holder go first in the next one
  // (half the turns on 2 nodes). A ring of semaphores hands the turn to the next node, so that
  // every turn takes the record from another node.
  const std::string mine = "patterns.migratory.turn." + std::to_string(rank_);
  const std::string next = "patterns.migratory.turn." + std::to_string((rank_ + 1) % size_);
  lmdx_sema_init(mine.c_str(), rank_ == 0 ? 1 : 0);
  lmdx_sema_t my_turn = lmdx_sema_find(mine.c_str());
  lmdx_sema_t next_turn = lmdx_sema_find(next.c_str());
  Barrier();
  Stopwatch clock;
  clock.Start();
  for (int k = 0; k < rounds; ++k) {
    lmdx_sema_p_h(my_turn);
    lmdx_lock_h(lock);
    record[kTurns] += 1;
    if (record[kHolder] != static_cast<Word>(rank_) + 1) {
      if (record[kHolder] != 0) record[kMoves] += 1;
      record[kHolder] = rank_ + 1;
    }
    // Sums do not depend on the order of the turns, so a sequential run gives the same; a turn
    // that read a stale record loses the turns before it, which the sums show.
    for (std::size_t i = kData; i < kRecordWords; ++i) record[i] += Value(rank_, k, i);
    if (wrong_result_ && rank_ == 0 && k == rounds - 1) record[kData] += 1;
    lmdx_unlock_h(lock);
    lmdx_sema_v_h(next_turn);
  }
  Barrier();
  Outcome outcome{clock.Seconds(), record, ""};
  if (rank_ == 0) {
    const Word all = static_cast<Word>(rounds) * size_;
    if (record[kTurns] != all) Mismatch("the count of turns", all, record[kTurns]);
    for (std::size_t i = kData; i < kRecordWords; ++i) {
      Word sum = 0;
      for (int r = 0; r < size_; ++r) {
        for (int k = 0; k < rounds; ++k) sum += Value(r, k, i);
      }
      if (record[i] != sum) Mismatch("the record's word " + std::to_string(i), sum, record[i]);
    }
    outcome.note = "  the record changed node at " + std::to_string(record[kMoves]) + " of " +
                   std::to_string(all) + " turns";
  }
  return outcome;
}

// ---- false-sharing ----------------------------------------------------------------------------

std::size_t SliceStart(int rank) { return kPageWords * rank / size_; }

Outcome FalseSharing(int iterations) {
  Word* page = Shared<Word>("patterns.false_sharing", kPageWords);
  const std::size_t first = SliceStart(rank_), end = SliceStart(rank_ + 1);
  Barrier();
  Stopwatch clock;
  clock.Start();
  for (int k = 0; k < iterations; ++k) {
    for (std::size_t i = first; i < end; ++i) page[i] = Value(k, i, 3);
    if (wrong_result_ && rank_ == size_ - 1 && k == iterations - 1) page[end - 1] += 1;
    Barrier();
    for (std::size_t i = 0; i < kPageWords; ++i) {
      if (page[i] == Value(k, i, 3)) continue;
      int owner = 0;
      while (SliceStart(owner + 1) <= i) ++owner;
      Mismatch(At("iteration", k, i) + " (rank " + std::to_string(owner) + "'s slice)",
               Value(k, i, 3), page[i]);
    }
    Barrier();
  }
  return {clock.Seconds(), page, ""};
}

// ---- read-mostly ------------------------------------------------------------------------------

constexpr std::size_t kTablePages = 16;
constexpr int kUpdateEvery = 25;
constexpr int kWordsPerUpdate = 4;

Outcome ReadMostly(int iterations) {
  const std::size_t words = kTablePages * kPageWords;
  Word* table = Shared<Word>("patterns.read_mostly", words);
  std::vector<Word> reference(words);
  for (std::size_t i = 0; i < words; ++i) reference[i] = Value(0, i, 4);
  const int last_update = iterations / kUpdateEvery * kUpdateEvery;
  if (rank_ == 0) {
    std::memcpy(table, reference.data(), words * sizeof(Word));
    if (wrong_result_ && last_update == 0) table[5] += 1;
  }
  Barrier();
  Stopwatch clock;
  clock.Start();
  for (int k = 1; k <= iterations; ++k) {
    if (k % kUpdateEvery == 0) {
      Barrier();  // every node has finished reading the table as it was
      const int update = k / kUpdateEvery;
      for (int u = 0; u < kWordsPerUpdate; ++u) {
        const std::size_t page =
            (static_cast<std::size_t>(update) * kWordsPerUpdate + u) % kTablePages;
        const std::size_t at = page * kPageWords + Value(update, u, 5) % kPageWords;
        reference[at] = Value(k, at, 4);
        if (rank_ == 0) table[at] = reference[at];
        if (rank_ == 0 && wrong_result_ && k == last_update && u == 0) table[at] += 1;
      }
      Barrier();  // the new words are there for every reader
    }
    for (std::size_t i = 0; i < words; ++i) {
      if (table[i] != reference[i]) Mismatch(At("iteration", k, i), reference[i], table[i]);
    }
  }
  Barrier();
  return {clock.Seconds(), table, ""};
}

// ---- neighbour --------------------------------------------------------------------------------

constexpr int kBandRows = 8;
constexpr int kColumns = kPageBytes / sizeof(double);  // a row is a page

// The border is fixed; the inside starts from values that differ everywhere, so that every row
// (and every boundary page) changes at every iteration.
double Initial(int row, int column, int rows) {
  if (row == 0 || column == 0 || row == rows - 1 || column == kColumns - 1) {
    return 1.0 + 0.001 * (row + column);
  }
  return static_cast<double>(Value(row, column, 6) >> 11) * 0x1.0p-53;
}

// Rows [first, end) of dst from src; the border stays.
void Sweep(const double* src, double* dst, int rows, int first, int end) {
  for (int i = std::max(first, 1); i < std::min(end, rows - 1); ++i) {
    const double* up = src + static_cast<std::size_t>(i - 1) * kColumns;
    const double* row = src + static_cast<std::size_t>(i) * kColumns;
    const double* down = src + static_cast<std::size_t>(i + 1) * kColumns;
    double* out = dst + static_cast<std::size_t>(i) * kColumns;
    for (int j = 1; j < kColumns - 1; ++j) {
      out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
    }
  }
}

Word Bits(double value) {
  Word bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

Outcome Neighbour(int iterations) {
  const int rows = kBandRows * size_;
  const std::size_t cells = static_cast<std::size_t>(rows) * kColumns;
  // Block homes give rank r pages [8r, 8r + 8): its band is homed where it is written.
  double* grids[2] = {Shared<double>("patterns.neighbour.0", cells),
                      Shared<double>("patterns.neighbour.1", cells)};
  const int first = kBandRows * rank_, end = first + kBandRows;
  for (double* grid : grids) {
    for (int i = first; i < end; ++i) {
      for (int j = 0; j < kColumns; ++j) {
        grid[static_cast<std::size_t>(i) * kColumns + j] = Initial(i, j, rows);
      }
    }
  }
  Barrier();
  Stopwatch clock;
  clock.Start();
  for (int k = 0; k < iterations; ++k) {
    double* next = grids[(k + 1) % 2];
    Sweep(grids[k % 2], next, rows, first, end);
    if (wrong_result_ && rank_ == 0 && k == iterations - 1) next[kColumns + kColumns / 2] += 1.0;
    Barrier();
  }
  Outcome outcome{clock.Seconds(), grids[0], ""};

  // The same sweeps over the whole grid in private memory, bit for bit the same operations; each
  // node compares its own band, which it computed from its neighbours' boundary rows.
  std::vector<double> a(cells), b(cells);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < kColumns; ++j) {
      a[static_cast<std::size_t>(i) * kColumns + j] = Initial(i, j, rows);
    }
  }
  b = a;
  for (int k = 0; k < iterations; ++k) {
    Sweep(a.data(), b.data(), rows, 0, rows);
    std::swap(a, b);
  }
  const double* result = grids[iterations % 2];
  for (std::size_t at = static_cast<std::size_t>(first) * kColumns;
       at < static_cast<std::size_t>(end) * kColumns; ++at) {
    if (Bits(result[at]) != Bits(a[at])) {
      char expected[32], got[32];
      std::snprintf(expected, sizeof expected, "%.17g", a[at]);
      std::snprintf(got, sizeof got, "%.17g", result[at]);
      Mismatch("after " + std::to_string(iterations) + " iterations, row " +
                   std::to_string(at / kColumns) + ", column " + std::to_string(at % kColumns),
               expected, got);
    }
  }
  return outcome;
}

// ---- main -------------------------------------------------------------------------------------

struct Pattern {
  const char* name;
  Outcome (*run)(int iterations);
  int default_iterations;
};

// The report's sizes: from a few hundredths of a second to about a second per run here (4
// nodes of migratory the longest), the whole table, 2 and 4 nodes, in about a minute.
const Pattern kPatterns[] = {
    {"prodcons", Prodcons, 3000},          {"migratory", Migratory, 1500},
    {"false-sharing", FalseSharing, 1500}, {"read-mostly", ReadMostly, 10000},
    {"neighbour", Neighbour, 1500},
};

[[noreturn]] void Usage(const std::string& what) {
  if (rank_ == 0) {
    std::fprintf(stderr,
                 "patterns: %s; usage: patterns prodcons|migratory|false-sharing|read-mostly|"
                 "neighbour [ITERATIONS >= 1] [--wrong-result]\n",
                 what.c_str());
    lmdx_abort(2, "bad arguments");
  }
  // The other ranks leave the ending to rank 0: one of them aborting first could stop the job
  // before rank 0 had printed the usage. Rank 0's abort ends this wait.
  lmdx_barrier_all();
  lmdx_abort(2, "bad arguments");
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  rank_ = lmdx_rank();
  size_ = lmdx_size();
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--wrong-result") == 0) {
      wrong_result_ = true;
    } else {
      args.emplace_back(argv[i]);
    }
  }
  if (args.empty() || args.size() > 2) Usage("name one pattern");
  const Pattern* pattern = nullptr;
  for (const Pattern& p : kPatterns) {
    if (args[0] == p.name) pattern = &p;
  }
  if (pattern == nullptr) Usage("no pattern '" + args[0] + "'");
  pattern_ = pattern->name;
  int iterations = pattern->default_iterations;
  if (args.size() == 2) {
    char* end = nullptr;
    long value = std::strtol(args[1].c_str(), &end, 10);
    if (*end != '\0' || value < 1 || value > 100000000) Usage("bad iterations '" + args[1] + "'");
    iterations = static_cast<int>(value);
  }

  Outcome outcome = pattern->run(iterations);
  if (rank_ == 0) {
    const char* protocol = lmdx_protocol_of(outcome.data);
    std::printf(
        "patterns: %s, %d iterations on %d nodes, protocol %s: %.4f s (%.4f ms per "
        "iteration)\n",
        pattern_, iterations, size_, protocol != nullptr ? protocol : "?", outcome.seconds,
        1e3 * outcome.seconds / iterations);
    if (!outcome.note.empty()) std::printf("%s\n", outcome.note.c_str());
    std::fflush(stdout);
  }
  Barrier();  // every node has checked what it read
  if (rank_ == 0) std::printf("verified\n");
  lmdx_finalize();
  return 0;
}
