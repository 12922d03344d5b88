// Litmus tests of the consistency protocols through the public API, one scenario per run:
//   litmus SCENARIO [ITERATIONS]
// SPMD, any number of nodes. Every scenario but the racy ones is data-race free (every conflicting
// pair of accesses is ordered by a lock, a semaphore or a barrier), so under every protocol it must
// see what a sequential run sees; each node keeps that sequential reference in private memory and
// compares shared memory with it. The first difference ends the job with one line naming the rank,
// the scenario, what differs, the index, the expected and the actual value; rank 0 prints
// "verified: SCENARIO on N nodes" when all is well.
//
// Iterations are rotated so that every node is writer, reader, home and non-home in turn, and every
// reader holds a copy of the data from the iteration before (it checked it), which the new writes
// must invalidate or update: a protocol that forgets a copy shows here as a stale value.
#include "tests/dsm/programs/lazy_scenarios.h"
#include "tests/dsm/programs/walk_scenarios.h"
#include "tests/dsm/programs/litmus_support.h"

#include <lmdx/lmdx.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lmdx::litmus {
namespace {

// ---- Message passing --------------------------------------------------------------------------

// The writer writes the data, then raises a flag under a lock; a reader that sees the flag under
// the lock must see the data. Half of the iterations write the data inside the critical section,
// half before it: a release sends every write since the last one, not only those under the lock.
void MessagePassingLock(int iterations) {
  Words data("mp_lock_data", 3 * kPageWords + 100);
  auto* flag = Var<std::uint64_t>("mp_lock_flag", 1);
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const int writer = it % size_;
    const auto want = static_cast<std::uint64_t>(it) + 1;
    if (rank_ == writer) {
      const bool inside = it % 2 == 1;
      if (!inside) data.Advance(it, true);
      Lock("mp_lock");
      if (inside) data.Advance(it, true);
      *flag = want;
      Unlock("mp_lock");
    } else {
      data.Advance(it, false);
      AwaitFlagUnderLock("mp_lock", flag, want);
    }
    data.Verify("after the lock handoff of " + At(it));
    Barrier();
  }
}

// The same through a semaphore: the writer's V's carry its writes to the readers' P's.
void MessagePassingSemaphore(int iterations) {
  Words data("mp_sema_data", 3 * kPageWords + 100);
  Ok(lmdx_sema_init("mp_sema", 0), "lmdx_sema_init");
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const int writer = it % size_;
    data.Advance(it, rank_ == writer);
    if (rank_ == writer) {
      for (int reader = 1; reader < size_; ++reader) Ok(lmdx_sema_v("mp_sema"), "lmdx_sema_v");
    } else {
      Ok(lmdx_sema_p("mp_sema"), "lmdx_sema_p");
    }
    data.Verify("after the semaphore of " + At(it));
    Barrier();
  }
}

// The same through a barrier (lmdx_barrier_all and a named barrier in turn).
void MessagePassingBarrier(int iterations) {
  Words data("mp_barrier_data", 3 * kPageWords + 100);
  Ok(lmdx_barrier_init("litmus_barrier", size_), "lmdx_barrier_init");
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    data.Advance(it, rank_ == it % size_);
    if (it % 2 == 0) {
      Barrier();
    } else {
      NamedBarrier();
    }
    data.Verify("after the barrier of " + At(it));
    Barrier();
  }
}

// ---- Transitivity -----------------------------------------------------------------------------

// A chain through every node: position p waits for its flag under lock "tr_lock_p", checks what
// positions 0..p-1 wrote, writes its own slot and raises the flag of p + 1 under that position's
// lock; the last hands back to position 0, which checks every slot. Position p + 2 never takes a
// lock position p released, so p's writes reach it only through p + 1's release (A -> B -> C).
// Slots are a page each in even iterations and neighbouring words of one page in odd ones.
void Transitivity(int iterations) {
  constexpr std::size_t kSlotWords = 8;
  auto* data = Var<std::uint64_t>("tr_data", static_cast<std::size_t>(size_) * kPageWords);
  auto* flags = Var<std::uint64_t>("tr_flags", static_cast<std::size_t>(size_));
  auto lock_of = [](int position) { return "tr_lock_" + std::to_string(position); };
  auto value = [](int it, int position, std::size_t j) {
    return Hash(static_cast<std::uint64_t>(it), static_cast<std::uint64_t>(position), j) | 1;
  };
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const bool spread = it % 2 == 0;
    auto slot = [&](int position) {
      return data + static_cast<std::size_t>(position) * (spread ? kPageWords : kSlotWords);
    };
    auto check_slots = [&](int count, const std::string& when) {
      for (int p = 0; p < count; ++p) {
        for (std::size_t j = 0; j < kSlotWords; ++j) {
          Expect([&] { return "slot of chain position " + std::to_string(p) + " " + when; },
                 static_cast<std::size_t>(slot(p) - data) + j, value(it, p, j), slot(p)[j]);
        }
      }
    };
    const auto want = static_cast<std::uint64_t>(it) + 1;
    const int position = (rank_ - it % size_ + size_) % size_;  // node (it + p) % N is position p
    if (position > 0) {
      AwaitFlagUnderLock(lock_of(position), &flags[position], want);
      check_slots(position, "at position " + std::to_string(position) + ", " + At(it));
    }
    for (std::size_t j = 0; j < kSlotWords; ++j) slot(position)[j] = value(it, position, j);
    const int next = (position + 1) % size_;
    Lock(lock_of(next));
    flags[next] = want;
    Unlock(lock_of(next));
    if (position == 0) {
      AwaitFlagUnderLock(lock_of(0), &flags[0], want);
      check_slots(size_, "at the end of the chain, " + At(it));
    }
    Barrier();
  }
}

// ---- Several writers of one page --------------------------------------------------------------

// Every node writes its own bytes of the same pages between two barriers, read-modify-write, with
// owners interleaved byte by byte, by pairs, by words and at random; after the barrier every node
// checks every byte.
void FalseSharing(int iterations) {
  constexpr std::size_t kBytes = 2 * kPageBytes + 17;
  auto* bytes = Var<unsigned char>("fs_bytes", kBytes);
  std::vector<unsigned char> reference(kBytes, 0);
  std::vector<unsigned char> before(kBytes, 0);
  constexpr int kUnwritten = -1;
  std::vector<int> owners(kBytes, kUnwritten);
  Ok(lmdx_barrier_init("litmus_barrier", size_), "lmdx_barrier_init");
  Barrier();
  const auto nodes = static_cast<std::size_t>(size_);
  // On a difference, every differing byte's story, so that a lost diff (the value before the
  // iteration) tells itself apart from a wrong one.
  auto report = [&](int it) {
    std::string text = "bytes after the barrier of " + At(it) + " differ:";
    int shown = 0;
    std::size_t differing = 0;
    for (std::size_t i = 0; i < kBytes; ++i) {
      if (bytes[i] == reference[i]) continue;
      ++differing;
      if (++shown > 6) continue;
      text +=
          " [index " + std::to_string(i) + " (page " + std::to_string(i / kPageBytes) +
          "), written by " +
          (owners[i] == kUnwritten ? std::string("nobody") : "rank " + std::to_string(owners[i])) +
          ": expected " + std::to_string(reference[i]) + ", got " + std::to_string(bytes[i]) +
          ", before the iteration " + std::to_string(before[i]) + "]";
    }
    Die(text + " (" + std::to_string(differing) + " bytes differ)");
  };
  for (int it = 0; it < iterations; ++it) {
    const auto round = static_cast<std::uint64_t>(it);
    before = reference;
    for (std::size_t i = 0; i < kBytes; ++i) {
      owners[i] = kUnwritten;
      if (Hash(round, i, 1) % 4 == 0) continue;  // this byte stays as it is
      std::size_t owner = 0;
      switch (it % 4) {
        case 0: owner = i % nodes; break;
        case 1: owner = (i / 2) % nodes; break;
        case 2: owner = (i / 8) % nodes; break;
        default: owner = Hash(round, i, 2) % nodes; break;
      }
      owners[i] = static_cast<int>(owner);
      auto updated = static_cast<unsigned char>(reference[i] * 3 + round + i + 1);
      if (owner == static_cast<std::size_t>(rank_)) {
        Expect([&] { return "own byte before the write of " + At(it); }, i, reference[i], bytes[i]);
        bytes[i] = static_cast<unsigned char>(bytes[i] * 3 + round + i + 1);
      }
      reference[i] = updated;
    }
    if (it % 2 == 0) {
      Barrier();
    } else {
      NamedBarrier();
    }
    for (std::size_t i = 0; i < kBytes; ++i) {
      if (bytes[i] != reference[i]) report(it);
    }
    Barrier();
  }
}

// ---- Migratory data ---------------------------------------------------------------------------

// Two pages handed from writer to writer under one lock: each holder checks the whole area
// against the reference replayed up to the shared counter, applies the next update (some bytes
// of the first page, or of both) and bumps the counter.
void Migratory(int rounds) {
  constexpr std::size_t kBytes = 2 * kPageBytes;
  constexpr std::size_t kHeader = 16;
  auto* area = Var<unsigned char>("mig_area", kBytes);
  auto* counter = reinterpret_cast<std::uint64_t*>(area);
  unsigned char* region = area + kHeader;
  constexpr std::size_t kRegion = kBytes - kHeader;
  std::vector<unsigned char> reference(kRegion, 0);
  std::uint64_t replayed = 0;
  auto replay_to = [&](std::uint64_t count) {
    for (; replayed < count; ++replayed) {
      const std::size_t end = replayed % 2 == 0 ? kPageBytes - kHeader : kRegion;
      for (std::size_t i = 0; i < end; ++i) {
        if (Hash(replayed, i, 3) % 5 == 0) {
          reference[i] = static_cast<unsigned char>(reference[i] + 1 + replayed % 7);
        }
      }
    }
  };
  Barrier();
  for (int round = 0; round < rounds; ++round) {
    Lock("mig_lock");
    const std::uint64_t count = *counter;
    replay_to(count);
    for (std::size_t i = 0; i < kRegion; ++i) {
      Expect([&] { return "migratory byte after " + std::to_string(count) + " updates"; },
             kHeader + i, reference[i], region[i]);
    }
    replay_to(count + 1);
    for (std::size_t i = 0; i < kRegion; ++i) {
      if (region[i] != reference[i]) region[i] = reference[i];
    }
    *counter = count + 1;
    Unlock("mig_lock");
    if ((round + rank_) % 3 == 0) std::this_thread::yield();  // vary who takes the lock next
  }
  Barrier();
  const auto total = static_cast<std::uint64_t>(rounds) * static_cast<std::uint64_t>(size_);
  Expect("the migratory counter at the end", 0, total, *counter);
  replay_to(total);
  for (std::size_t i = 0; i < kRegion; ++i) {
    Expect("migratory byte at the end", kHeader + i, reference[i], region[i]);
  }
  Barrier();
}

// ---- Read-mostly data -------------------------------------------------------------------------

// One writer at a time (a new one every four iterations) changes a few words; every node reads
// all of them after each barrier. Readers keep their copies for long stretches.
void ReadMostly(int iterations) {
  constexpr std::size_t kWords = 5 * kPageWords;
  auto* data = Var<std::uint64_t>("rm_data", kWords);
  std::vector<std::uint64_t> reference(kWords, 0);
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const int writer = (it / 4) % size_;
    const auto round = static_cast<std::uint64_t>(it);
    for (std::uint64_t k = 0; k <= round % 5; ++k) {
      const std::size_t i = Hash(round, k, 4) % kWords;
      reference[i] = Hash(round, k, 5);
      if (rank_ == writer) data[i] = reference[i];
    }
    Barrier();
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t i = 0; i < kWords; ++i) {
        Expect([&] { return "read-mostly word after the barrier of " + At(it); }, i, reference[i],
               data[i]);
      }
    }
    Barrier();
  }
}

// ---- Threads of one node ----------------------------------------------------------------------

// Every node runs kThreads threads (OS threads, or LMDX threads of the node), W in all. They write
// two shared pages: byte i < kPlainBytes belongs to writer i mod W and is written without any
// synchronisation (so siblings write the page while another node's release, invalidation, update
// or notices arrive); the rest of the second page holds kThreads locked areas, each a run of bytes
// and a counter written under its own lock. Thread t of every node uses lock t, so a lock moves
// between nodes while the other threads of each node keep writing the same page; with one lock
// for all, threads of one node also hand the lock to each other. Each thread checks, before it
// writes again, that its own bytes still hold what it wrote: an invalidation must not lose writes
// the node has not sent yet; and every lock holder checks its locked area.
constexpr int kThreads = 3;
constexpr std::size_t kThreadBytes = 2 * kPageBytes;
constexpr std::size_t kPlainBytes = 6000;
constexpr std::size_t kLockedBytes = 600;  // per locked area, then its counter
constexpr std::size_t kLockedArea = kLockedBytes + sizeof(std::uint64_t);

struct ThreadScenario {
  unsigned char* area = nullptr;
  int rounds = 0;
  bool one_lock = false;
} threads_;

unsigned char PlainValue(std::size_t writer, int round, std::size_t i) {
  return static_cast<unsigned char>(Hash(writer, static_cast<std::uint64_t>(round), i) | 1);
}

// The locked bytes after count updates (zero before the first, as every variable starts).
unsigned char LockedValue(std::uint64_t count, std::size_t i) {
  return count == 0 ? 0 : static_cast<unsigned char>(Hash(count, i, 6) | 1);
}

unsigned char* LockedArea(std::size_t index) {
  return threads_.area + kPlainBytes + index * kLockedArea;
}

std::uint64_t* LockedCounter(std::size_t index) {
  return reinterpret_cast<std::uint64_t*>(LockedArea(index) + kLockedBytes);
}

void CheckPlain(std::size_t writers, int round, const std::string& when) {
  for (std::size_t i = 0; i < kPlainBytes; ++i) {
    Expect([&] { return "byte of writer " + std::to_string(i % writers) + " " + when; }, i,
           PlainValue(i % writers, round, i), threads_.area[i]);
  }
}

void CheckLocked(std::size_t index, std::uint64_t count, const std::string& when) {
  const unsigned char* bytes = LockedArea(index);
  for (std::size_t i = 0; i < kLockedBytes; ++i) {
    Expect(
        [&] {
          return "locked area " + std::to_string(index) + " after " + std::to_string(count) +
                 " updates " + when;
        },
        static_cast<std::size_t>(bytes - threads_.area) + i, LockedValue(count, i), bytes[i]);
  }
}

void* ThreadBody(void* argument) {
  const auto writers = static_cast<std::size_t>(size_) * kThreads;
  const auto index = reinterpret_cast<std::uintptr_t>(argument);
  const auto me = static_cast<std::size_t>(rank_) * kThreads + index;
  const std::size_t locked = threads_.one_lock ? 0 : index;
  const std::string lock = "thr_lock_" + std::to_string(locked);
  unsigned char* area = threads_.area;
  const std::string who = "thread " + std::to_string(index);
  for (int round = 0; round < threads_.rounds; ++round) {
    for (std::size_t i = me; i < kPlainBytes; i += writers) {
      if (round > 0) {
        Expect([&] { return who + ": own byte written in round " + std::to_string(round - 1); }, i,
               PlainValue(me, round - 1, i), area[i]);
      }
      area[i] = PlainValue(me, round, i);
    }
    if (round % 2 == 0) {
      Lock(lock);
      const std::uint64_t count = *LockedCounter(locked);
      CheckLocked(locked, count, "(" + who + ", round " + std::to_string(round) + ")");
      unsigned char* bytes = LockedArea(locked);
      for (std::size_t i = 0; i < kLockedBytes; ++i) bytes[i] = LockedValue(count + 1, i);
      *LockedCounter(locked) = count + 1;
      Unlock(lock);
    }
    if (round % 5 == 4) {
      Ok(lmdx_barrier("thr_barrier"), "lmdx_barrier thr_barrier");
      CheckPlain(writers, round, "after the barrier of round " + std::to_string(round));
      Ok(lmdx_barrier("thr_barrier"), "lmdx_barrier thr_barrier");
    }
  }
  return nullptr;
}

void Threads(int rounds, bool lmdx_threads, bool one_lock) {
  static_assert(kPlainBytes + kThreads * kLockedArea <= kThreadBytes);
  threads_.area = Var<unsigned char>("thr_area", kThreadBytes);
  threads_.rounds = rounds;
  threads_.one_lock = one_lock;
  Ok(lmdx_barrier_init("thr_barrier", size_ * kThreads), "lmdx_barrier_init");
  Barrier();
  if (lmdx_threads) {
    std::vector<lmdx_thread_t> started;
    for (std::uintptr_t t = 0; t < kThreads; ++t) {
      lmdx_thread_t thread = lmdx_start_thread_on(rank_, ThreadBody, reinterpret_cast<void*>(t));
      if (thread == LMDX_THREAD_INVALID) Die("lmdx_start_thread_on");
      started.push_back(thread);
    }
    for (lmdx_thread_t thread : started) lmdx_join_thread(thread);
  } else {
    std::vector<std::thread> started;
    for (std::uintptr_t t = 0; t < kThreads; ++t) {
      started.emplace_back(ThreadBody, reinterpret_cast<void*>(t));
    }
    for (std::thread& thread : started) thread.join();
  }
  Barrier();
  const auto writers = static_cast<std::size_t>(size_) * kThreads;
  CheckPlain(writers, rounds - 1, "at the end");
  const auto per_thread = static_cast<std::uint64_t>((rounds + 1) / 2);
  for (std::size_t locked = 0; locked < (one_lock ? 1 : kThreads); ++locked) {
    const std::uint64_t users = one_lock ? writers : static_cast<std::uint64_t>(size_);
    Expect("the counter of locked area " + std::to_string(locked) + " at the end",
           static_cast<std::size_t>(reinterpret_cast<unsigned char*>(LockedCounter(locked)) -
                                    threads_.area),
           users * per_thread, *LockedCounter(locked));
    CheckLocked(locked, users * per_thread, "at the end");
  }
  Barrier();
}

// ---- Two protocols in one program -------------------------------------------------------------

// Three variables whose protocols the test's configuration file chooses (two_a and two_c* by
// region, two_b by the default), written in the same intervals: words of the first page by every
// node between barriers, the second page by one writer and a lock.
void TwoProtocols(int iterations) {
  std::vector<Words> vars;
  for (const char* name : {"two_a", "two_b", "two_c1"}) vars.emplace_back(name, 2 * kPageWords);
  auto* flag = Var<std::uint64_t>("two_flag", 1);
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    for (Words& var : vars) {
      for (std::size_t i = 0; i < kPageWords; ++i) {
        var.Set(it, i, i % static_cast<std::size_t>(size_) == static_cast<std::size_t>(rank_));
      }
    }
    Barrier();
    for (const Words& var : vars) var.Verify("after the barrier of " + At(it));
    Barrier();
    const int writer = it % size_;
    const auto want = static_cast<std::uint64_t>(it) + 1;
    for (Words& var : vars) var.Advance(it, rank_ == writer, kPageWords, kPageWords);
    if (rank_ == writer) {
      Lock("two_lock");
      *flag = want;
      Unlock("two_lock");
    } else {
      AwaitFlagUnderLock("two_lock", flag, want);
    }
    for (const Words& var : vars) var.Verify("after the lock handoff of " + At(it));
    Barrier();
  }
}

// ---- The checks themselves --------------------------------------------------------------------

// Message passing through a barrier with a reference that is wrong in one word on the last rank:
// the job must fail and name that word, or a broken protocol could pass unnoticed.
void SelfTest(int) {
  Words data("mp_barrier_data", 3 * kPageWords + 100);
  Barrier();
  data.Advance(0, rank_ == 0);
  if (rank_ == size_ - 1) data.Set(1, 5, false);  // a value nobody stores
  Barrier();
  data.Verify("after the barrier of " + At(0));
  Barrier();
}

// ---- Racy programs under sc -------------------------------------------------------------------

// No LMDX synchronisation between writer and readers: the writer stores the data, then a flag; a
// reader spins on the flag and must then see the data (sequential consistency keeps the order of
// the writer's stores, and a reader's spinning copy must eventually be invalidated). Then one
// word counted up by one node: no reader ever sees it go backwards, and all see the last value.
void RacySc(int iterations) {
  Words data("racy_data", kPageWords);
  auto* flag = Var<std::uint64_t>("racy_flag", 1);
  Barrier();
  for (int it = 0; it < iterations; ++it) {
    const int writer = it % size_;
    const auto want = static_cast<std::uint64_t>(it) + 1;
    data.Advance(it, rank_ == writer);
    if (rank_ == writer) {
      std::atomic_ref<std::uint64_t>(*flag).store(want, std::memory_order_release);
    } else {
      Spin spin("the racy flag of " + At(it));
      for (;;) {
        std::uint64_t seen = std::atomic_ref<std::uint64_t>(*flag).load(std::memory_order_acquire);
        if (seen == want) break;
        if (seen != want - 1) Expect("the racy flag", 0, want, seen);
        spin.Pause();
      }
    }
    data.Verify("after the racy flag of " + At(it));
    Barrier();
  }
  auto* count = Var<std::uint64_t>("racy_count", 1);
  const auto last = static_cast<std::uint64_t>(iterations) * 5;
  Barrier();
  if (rank_ == 0) {
    for (std::uint64_t k = 1; k <= last; ++k) {
      std::atomic_ref<std::uint64_t>(*count).store(k, std::memory_order_release);
      if (k % 8 == 0) std::this_thread::yield();
    }
  } else {
    Spin spin("the racy count to reach " + std::to_string(last));
    std::uint64_t previous = 0;
    while (previous < last) {
      std::uint64_t seen = std::atomic_ref<std::uint64_t>(*count).load(std::memory_order_acquire);
      if (seen < previous) {
        Die("the racy count went back from " + std::to_string(previous) + " to " +
            std::to_string(seen));
      }
      previous = seen;
      spin.Pause();
    }
    Expect("the racy count at the end", 0, last, previous);
  }
  Barrier();
}

}  // namespace

int Run(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  rank_ = lmdx_rank();
  size_ = lmdx_size();
  scenario_ = argc > 1 ? argv[1] : "";
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  if (iterations <= 0) Die("ITERATIONS must be positive");
  const std::map<std::string, std::function<void(int)>> scenarios = {
      {"mp_lock", MessagePassingLock},
      {"mp_sema", MessagePassingSemaphore},
      {"mp_barrier", MessagePassingBarrier},
      {"transitivity", Transitivity},
      {"false_sharing", FalseSharing},
      {"migratory", Migratory},
      {"read_mostly", ReadMostly},
      {"threads", [](int rounds) { Threads(rounds, false, false); }},
      {"lmdx_threads", [](int rounds) { Threads(rounds, true, false); }},
      {"threads_one_lock", [](int rounds) { Threads(rounds, false, true); }},
      {"lmdx_threads_one_lock", [](int rounds) { Threads(rounds, true, true); }},
      {"two_protocols", TwoProtocols},
      {"home_writes_back", HomeWritesBack},
      {"notices_across_a_barrier", NoticesAcrossABarrier},
      {"home_served_while_writing", HomeServedWhileWriting},
      {"walks", Walks},
      {"racy_sc", RacySc},
      {"self_test", SelfTest},
  };
  auto scenario = scenarios.find(scenario_);
  if (scenario == scenarios.end()) Die("unknown scenario");
  scenario->second(iterations);
  if (rank_ == 0) {
    std::printf("verified: %s on %d nodes\n", scenario_.c_str(), size_);
    std::fflush(stdout);
  }
  lmdx_finalize();
  return 0;
}

}  // namespace lmdx::litmus

int main(int argc, char** argv) {
  try {
    return lmdx::litmus::Run(argc, argv);
  } catch (const std::exception& error) {
    lmdx::litmus::Die(std::string("exception: ") + error.what());
  }
}
