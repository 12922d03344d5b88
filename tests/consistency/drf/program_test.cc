// The DRF fuzzer's generator keeps its promise (program.h): in every order the threads of a round
// may run in, no two accesses to a location race (happens-before, with vector clocks) and no
// thread waits for ever. Many random orders of many programs are simulated here, with the
// semantics of LMDX's locks, semaphores, barriers, start and join, and no DSM at all. The
// generator also draws the shapes that once read stale values (docs/protocols.md).
#include "tests/consistency/drf/program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace lmdx::drf {
namespace {

using Clock = std::vector<std::uint64_t>;

void Join(Clock& into, const Clock& from) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}

// A write or a read: who did it, and that thread's own clock entry then.
struct Access {
  int thread;
  std::uint64_t epoch;
};

bool OrderedBefore(const Access& access, const Clock& now) {
  return access.epoch <= now[static_cast<std::size_t>(access.thread)];
}

// Runs a round in the order `pick` chooses among the threads that can move; returns a problem, or
// an empty string.
class Simulation {
 public:
  Simulation(const Program& program, const Round& round, std::mt19937_64& pick)
      : round_(round), pick_(pick) {
    const std::size_t threads = round.threads.size();
    clocks_.assign(threads, Clock(threads, 0));
    for (std::size_t t = 0; t < threads; ++t) clocks_[t][t] = 1;
    next_.assign(threads, 0);
    started_.assign(threads, false);
    arrived_.assign(threads, false);
    for (std::size_t t = 0; t < threads; ++t) started_[t] = round.threads[t].main;
    lock_holder_.assign(static_cast<std::size_t>(program.locks), -1);
    lock_clocks_.assign(static_cast<std::size_t>(program.locks), Clock(threads, 0));
  }

  std::string Run() {
    for (;;) {
      std::vector<int> movable;
      bool all_done = true;
      for (int t = 0; t < Threads(); ++t) {
        if (Done(t)) continue;
        all_done = false;
        if (CanMove(t)) movable.push_back(t);
      }
      if (all_done) return {};
      if (movable.empty()) return "deadlock: no thread can move" + Where();
      const int t = movable[pick_() % movable.size()];
      std::string problem = Move(t);
      if (!problem.empty()) return problem;
    }
  }

 private:
  int Threads() const { return static_cast<int>(round_.threads.size()); }
  bool Done(int t) const { return next_[t] >= round_.per_thread[t].size(); }
  const Op& Next(int t) const { return round_.ops[round_.per_thread[t][next_[t]]]; }
  std::string Where() const {
    std::string text;
    for (int t = 0; t < Threads(); ++t) {
      if (!Done(t)) text += " [thread " + std::to_string(t) + " at " + OpName(Next(t).kind) + "]";
    }
    return text;
  }

  bool CanMove(int t) const {
    if (!started_[t] || arrived_[t]) return false;
    const Op& op = Next(t);
    switch (op.kind) {
      case OpKind::kLock: return lock_holder_[op.lock] < 0;
      case OpKind::kSemaP: {
        auto queue = semaphores_.find({op.other, t});
        return queue != semaphores_.end() && !queue->second.empty();
      }
      case OpKind::kJoin: return Done(op.other);
      default: return true;
    }
  }

  void Tick(int t) { ++clocks_[t][t]; }

  // The barrier op of t: arrives, and releases every arrived thread once all of `who` are there.
  void Arrive(int t, bool mains_only) {
    arrived_[t] = true;
    std::vector<int> who;
    for (int u = 0; u < Threads(); ++u) {
      if (!mains_only || round_.threads[u].main) who.push_back(u);
    }
    for (int u : who) {
      if (!arrived_[u]) return;
    }
    Clock meet(Threads(), 0);
    for (int u : who) Join(meet, clocks_[u]);
    for (int u : who) {
      Join(clocks_[u], meet);
      Tick(u);
      arrived_[u] = false;
      ++next_[u];
    }
  }

  std::string Touch(int t, const Op& op, bool write) {
    auto& state = locations_[op.location];
    const Clock& now = clocks_[t];
    auto race = [&](const Access& other, const char* what) {
      return "race on location " + std::to_string(op.location) + ": " + OpName(op.kind) +
             " at step " + std::to_string(op.step) + " by thread " + std::to_string(t) +
             " is not ordered after a " + what + " by thread " + std::to_string(other.thread);
    };
    if (state.write && state.write->thread != t && !OrderedBefore(*state.write, now)) {
      return race(*state.write, "write");
    }
    if (write) {
      for (const Access& read : state.reads) {
        if (read.thread != t && !OrderedBefore(read, now)) return race(read, "read");
      }
      state.write = Access{t, now[t]};
      state.reads.clear();
    } else {
      state.reads.push_back({t, now[t]});
    }
    return {};
  }

  std::string Move(int t) {
    const Op& op = Next(t);
    switch (op.kind) {
      case OpKind::kRead:
      case OpKind::kGet: {
        std::string problem = Touch(t, op, false);
        if (!problem.empty()) return problem;
        break;
      }
      case OpKind::kWrite:
      case OpKind::kPut: {
        std::string problem = Touch(t, op, true);
        if (!problem.empty()) return problem;
        break;
      }
      case OpKind::kLock:
        lock_holder_[op.lock] = t;
        Join(clocks_[t], lock_clocks_[op.lock]);
        break;
      case OpKind::kUnlock:
        if (lock_holder_[op.lock] != t)
          return "thread " + std::to_string(t) + " unlocks a lock it does not hold";
        lock_clocks_[op.lock] = clocks_[t];
        lock_holder_[op.lock] = -1;
        Tick(t);
        break;
      case OpKind::kSemaV:
        semaphores_[{t, op.other}].push_back(clocks_[t]);
        Tick(t);
        break;
      case OpKind::kSemaP: {
        auto& queue = semaphores_[{op.other, t}];
        Join(clocks_[t], queue.front());
        queue.pop_front();
        break;
      }
      case OpKind::kBarrier:
      case OpKind::kBarrierAll:
        if (lock_holder_held_by(t) && op.kind == OpKind::kBarrier) {
          return "thread " + std::to_string(t) +
                 " waits at a barrier of every thread holding a lock";
        }
        Arrive(t, op.kind == OpKind::kBarrierAll);
        return {};
      case OpKind::kStart:
        started_[op.other] = true;
        Join(clocks_[op.other], clocks_[t]);
        Tick(t);
        break;
      case OpKind::kJoin: Join(clocks_[t], clocks_[op.other]); break;
    }
    ++next_[t];
    return {};
  }

  bool lock_holder_held_by(int t) const {
    return std::find(lock_holder_.begin(), lock_holder_.end(), t) != lock_holder_.end();
  }

  struct LocationState {
    std::optional<Access> write;
    std::vector<Access> reads;
  };

  const Round& round_;
  std::mt19937_64& pick_;
  std::vector<Clock> clocks_;
  std::vector<std::size_t> next_;
  std::vector<bool> started_;
  std::vector<bool> arrived_;
  std::vector<int> lock_holder_;
  std::vector<Clock> lock_clocks_;
  std::map<std::pair<int, int>, std::deque<Clock>> semaphores_;
  std::map<int, LocationState> locations_;
};

TEST(DrfProgramTest, EveryOrderOfEveryRoundIsFreeOfRacesAndDeadlocks) {
  std::mt19937_64 pick(12345);
  int rounds = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const Layout layout = MakeLayout(seed, seed % 2 ? "mixed" : "hlrc", 4);
    for (int index = 0; index < layout.programs; ++index) {
      const Program program = MakeProgram(layout, index);
      for (const Round& round : program.rounds) {
        ++rounds;
        for (int order = 0; order < 25; ++order) {
          const std::string problem = Simulation(program, round, pick).Run();
          ASSERT_TRUE(problem.empty())
              << "seed " << seed << ", program " << index << ": " << problem;
        }
      }
    }
  }
  EXPECT_GT(rounds, 600);
}

TEST(DrfProgramTest, TheSameSeedDrawsTheSameProgramAndAnotherSeedAnother) {
  const Layout layout = MakeLayout(7, "mixed", 2);
  const Program a = MakeProgram(layout, 1);
  const Program b = MakeProgram(layout, 1);
  ASSERT_EQ(a.rounds.size(), b.rounds.size());
  for (std::size_t r = 0; r < a.rounds.size(); ++r) {
    ASSERT_EQ(a.rounds[r].ops.size(), b.rounds[r].ops.size());
    for (std::size_t i = 0; i < a.rounds[r].ops.size(); ++i) {
      EXPECT_EQ(a.rounds[r].ops[i].kind, b.rounds[r].ops[i].kind);
      EXPECT_EQ(a.rounds[r].ops[i].value, b.rounds[r].ops[i].value);
    }
  }
  const Program c = MakeProgram(layout, 0);
  EXPECT_NE(c.seed, a.seed);
  EXPECT_THROW(MakeLayout(1, "tso", 1), std::invalid_argument);
}

// The shapes of the two programs that once read stale values are among what it draws: a thread
// that puts back, under a lock, a value it wrote before another thread's write of the same
// location (a home's write back), and a main that holds a lock across lmdx_barrier_all and hands
// it on (notices across a barrier). Several protocols in one job, words and bytes, plain and
// explicit accesses, local and remote starts are drawn too.
TEST(DrfProgramTest, DrawsTheShapesThatOnceReadStaleValues) {
  int write_backs = 0, held_across = 0, handed_on_after = 0, bytes = 0, words = 0, gets = 0,
      puts = 0, remote_starts = 0, mixed = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const Layout layout = MakeLayout(seed, "mixed", 3);
    std::set<std::string> protocols;
    for (const Variable& variable : layout.variables) protocols.insert(variable.protocol);
    mixed += protocols.size() > 1;
    for (int index = 0; index < layout.programs; ++index) {
      const Program program = MakeProgram(layout, index);
      for (const Location& loc : program.locations) (loc.bytes == 1 ? bytes : words)++;
      for (const Round& round : program.rounds) {
        std::map<int, std::vector<std::pair<int, std::uint64_t>>> writes;  // by location
        std::vector<int> holding(round.threads.size(), -1);
        std::vector<bool> crossed(round.threads.size(), false);
        for (const Op& op : round.ops) {
          gets += op.kind == OpKind::kGet;
          puts += op.kind == OpKind::kPut;
          if (op.kind == OpKind::kStart) {
            remote_starts += round.threads[op.other].node != round.threads[op.thread].node;
          }
          if (op.kind == OpKind::kWrite || op.kind == OpKind::kPut) {
            auto& seen = writes[op.location];
            for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
              if (seen[i].first == op.thread && seen[i].second == op.value &&
                  seen.back().first != op.thread && seen.back().second != op.value) {
                ++write_backs;
                break;
              }
            }
            seen.emplace_back(op.thread, op.value);
          }
          if (op.kind == OpKind::kLock) holding[op.thread] = op.lock;
          if (op.kind == OpKind::kBarrierAll && holding[op.thread] >= 0) {
            ++held_across;
            crossed[op.thread] = true;
          }
          if (op.kind == OpKind::kUnlock) {
            holding[op.thread] = -1;
            crossed[op.thread] = false;
          }
          if (op.kind == OpKind::kSemaV && crossed[op.thread]) ++handed_on_after;
        }
      }
    }
  }
  EXPECT_GT(write_backs, 20);
  EXPECT_GT(held_across, 5);
  EXPECT_GT(handed_on_after + held_across, 5);
  EXPECT_GT(bytes, 100);
  EXPECT_GT(words, 100);
  EXPECT_GT(gets, 50);
  EXPECT_GT(puts, 50);
  EXPECT_GT(remote_starts, 20);
  EXPECT_EQ(mixed, 200);
}

}  // namespace
}  // namespace lmdx::drf
