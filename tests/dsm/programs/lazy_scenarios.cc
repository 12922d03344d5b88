#include "tests/dsm/programs/lazy_scenarios.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/dsm/programs/litmus_support.h"

namespace lmdx::litmus {
namespace {

void NeedThreeNodes() {
  if (size_ < 3) Die("this scenario needs 3 nodes or more, not " + std::to_string(size_));
}

// One page per node: with the default block homes, page k of the variable is homed at node k.
std::uint64_t* PagePerNode(const std::string& name) {
  return Var<std::uint64_t>(name, static_cast<std::size_t>(size_) * kPageWords);
}

std::uint64_t ValueOf(int iteration, std::uint64_t salt) {
  return Hash(static_cast<std::uint64_t>(iteration), salt, 77) | 1;
}

}  // namespace

void HomeWritesBack(int iterations) {
  NeedThreeNodes();
  std::uint64_t* data = PagePerNode("hw_data");
  for (const char* sema : {"hw_to_writer", "hw_to_reader", "hw_to_home"}) SemaInit(sema, 0);
  // Every node reads every page once, so that each home's later writes are to shared pages.
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(size_) * kPageWords; ++i) sum += data[i];
  Expect("the variable before any write", 0, std::uint64_t{0}, sum);
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const int home = it % size_;
    const int writer = (it + 1) % size_;
    const int reader = (it + 2) % size_;
    // A word of the home's page, a different one each iteration.
    std::uint64_t& x = data[static_cast<std::size_t>(home) * kPageWords + (it * 37) % kPageWords];
    const std::uint64_t a = ValueOf(it, 1);
    const std::uint64_t b = a + 1;
    if (rank_ == home) {
      Lock("hw_lock");
      x = a;  // its page stays writable past the release, with a fresh twin
      Unlock("hw_lock");
      V("hw_to_writer");
      P("hw_to_home");
      Lock("hw_lock");
      x = a;  // the value the home's twin holds, but not what the page holds now
      Unlock("hw_lock");
      V("hw_to_reader");
    } else if (rank_ == writer) {
      P("hw_to_writer");
      Lock("hw_lock");
      Expect("the home's first write, at the writer, " + At(it), 0, a, x);
      x = b;
      Unlock("hw_lock");
      V("hw_to_reader");
    } else if (rank_ == reader) {
      P("hw_to_reader");
      Lock("hw_lock");
      Expect("the writer's value, at the reader, " + At(it), 0, b, x);
      Unlock("hw_lock");
      V("hw_to_home");
      P("hw_to_reader");
      Lock("hw_lock");
      Expect("the home's write back of its first value, at the reader, " + At(it), 0, a, x);
      Unlock("hw_lock");
    }
    Barrier();
  }
}

namespace {

struct AcrossABarrier {
  std::uint64_t* data = nullptr;
  int iterations = 0;
};
AcrossABarrier across_;

// The word the writer of an iteration writes: on its own page, which it writes in place as home.
std::size_t WordOf(int iteration) {
  const auto writer = static_cast<std::size_t>((iteration + 1) % size_);
  return writer * kPageWords + static_cast<std::size_t>(iteration * 53) % kPageWords;
}

std::string Mine(const char* what) { return std::string(what) + std::to_string(rank_); }

// The second thread of every node: in the iterations where its node reads, it waits for the lock
// the holder keeps across the barrier and reads what the writer wrote before that barrier.
void* SecondThread(void*) {
  for (int it = 0; it < across_.iterations; ++it) {
    if ((it + 2) % size_ != rank_) continue;
    P(Mine("nb_go_"));
    Lock("nb_lock");
    Expect("the writer's word, at the second thread after the barrier, " + At(it), WordOf(it),
           ValueOf(it, 2), across_.data[WordOf(it)]);
    Unlock("nb_lock");
    V(Mine("nb_done_"));
  }
  return nullptr;
}

}  // namespace

void NoticesAcrossABarrier(int iterations) {
  NeedThreeNodes();
  across_ = {PagePerNode("nb_data"), iterations};
  std::vector<std::uint64_t> reference(static_cast<std::size_t>(size_) * kPageWords, 0);
  SemaInit(Mine("nb_go_"), 0);
  SemaInit(Mine("nb_done_"), 0);
  Barrier();
  lmdx_thread_t second = lmdx_start_thread_on(rank_, SecondThread, nullptr);
  if (second == LMDX_THREAD_INVALID) Die("lmdx_start_thread_on");
  for (int it = 0; it < iterations; ++it) {
    const int holder = it % size_;
    const int writer = (it + 1) % size_;
    const int reader = (it + 2) % size_;
    // Every main thread reads the word before it is written, so that the reader's node holds a
    // copy of its page when the writer writes it.
    const std::size_t word = WordOf(it);
    Expect("the word before the writer's barrier, at a main thread, " + At(it), word,
           reference[word], across_.data[word]);
    Barrier();
    if (rank_ == holder) {
      Lock("nb_lock");
      V("nb_go_" + std::to_string(reader));
    }
    if (rank_ == writer) across_.data[word] = ValueOf(it, 2);
    reference[word] = ValueOf(it, 2);
    Barrier();
    if (rank_ == holder) Unlock("nb_lock");
    if (rank_ == reader) P(Mine("nb_done_"));
  }
  lmdx_join_thread(second);
  Barrier();
}

void HomeServedWhileWriting(int iterations) {
  std::uint64_t* data = PagePerNode("sw_data");
  for (int rank = 0; rank < size_; ++rank) {
    SemaInit("sw_go_" + std::to_string(rank), 0);
  }
  const std::size_t words = static_cast<std::size_t>(size_) * kPageWords;
  std::vector<std::uint64_t> reference(words, 0);
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const int home = it % size_;
    const int reader = (it + 1) % size_;
    const std::size_t x =
        static_cast<std::size_t>(home) * kPageWords + (it * 29) % (kPageWords / 2);
    const std::size_t y = x + kPageWords / 2;  // another word of the same page, only read
    const std::uint64_t a = ValueOf(it, 3);
    const std::uint64_t b = a + 1;
    // The other nodes read the page, so it is shared before the home writes; the reader may
    // hold no copy yet (its first copy is then taken while the home writes).
    if (rank_ != reader) Expect("x before the iteration, " + At(it), x, reference[x], data[x]);
    Barrier();
    if (rank_ == home) {
      Lock("sw_lock");
      data[x] = a;  // released at once: the reader drops its copy at its next acquire
      Unlock("sw_lock");
      V("sw_go_" + std::to_string(reader));
      data[x] = b;  // no release between this write and the next
      std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the reader copies the page
      data[x] = a;
      V("sw_go_" + std::to_string(reader));
    } else if (rank_ == reader) {
      P(Mine("sw_go_"));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the home has written b by now
      Expect("the unwritten word, " + At(it), y, reference[y], data[y]);  // copies the page
      P(Mine("sw_go_"));
      Expect("the home's write back, after the home's release, " + At(it), x, a, data[x]);
    }
    reference[x] = a;
    Barrier();
  }
}

}  // namespace lmdx::litmus
