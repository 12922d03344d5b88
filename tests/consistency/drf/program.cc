#include "tests/consistency/drf/program.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace lmdx::drf {
namespace {

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A small deterministic generator (splitmix64): the same seed draws the same program everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(Mix(seed)) {}
  std::uint64_t Next() { return Mix(state_++); }
  // Uniform in [0, n).
  std::uint64_t Below(std::uint64_t n) { return n == 0 ? 0 : Next() % n; }
  int Int(int n) { return static_cast<int>(Below(static_cast<std::uint64_t>(n))); }
  bool Chance(int percent) { return Below(100) < static_cast<std::uint64_t>(percent); }
  template <typename T>
  const T& Pick(const std::vector<T>& from) {
    return from[Below(from.size())];
  }

 private:
  std::uint64_t state_;
};

const std::vector<std::string> kProtocols = {"sc", "update", "rc", "lrc", "hlrc"};
const std::vector<std::string> kHomes = {"BLOCK", "CYCLIC", "FIRST_TOUCH"};

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return text;
}

std::vector<Location> MakeLocations(const Layout& layout, Rng& rng) {
  std::vector<Location> locations;
  constexpr std::size_t kCells = kPageBytes / 8;
  for (int v = 0; v < static_cast<int>(layout.variables.size()); ++v) {
    for (std::size_t page = 0; page < layout.variables[v].pages; ++page) {
      // A few cells close together (falsely shared within a cache line or two) and a few
      // anywhere in the page.
      const int near = 1 + rng.Int(5);
      const int far = rng.Int(4);
      const std::size_t base = rng.Below(kCells - 8);
      std::set<std::size_t> cells;
      for (int i = 0; i < near; ++i) cells.insert(base + rng.Below(8));
      for (int i = 0; i < far; ++i) cells.insert(rng.Below(kCells));
      for (std::size_t cell : cells) {
        const std::size_t at = page * kPageBytes + cell * 8;
        if (rng.Chance(60)) {
          locations.push_back({v, at, 8});
          continue;
        }
        std::set<std::size_t> bytes;
        const int count = 1 + rng.Int(3);
        for (int i = 0; i < count; ++i) bytes.insert(rng.Below(8));
        for (std::size_t byte : bytes) locations.push_back({v, at + byte, 1});
      }
    }
  }
  return locations;
}

// Draws one round's global sequence while keeping the rules of program.h.
class RoundMaker {
 public:
  RoundMaker(const Layout& layout, const Program& program, Rng& rng)
      : program_(program), rng_(rng) {
    for (int node = 0; node < layout.nodes; ++node) round_.threads.push_back({node, true, -1});
    for (int node = 0; node < layout.nodes; ++node) {
      for (int extra = 1; extra < layout.threads_per_node[node]; ++extra) {
        const int starter = layout.os_threads || rng_.Chance(50) ? node : rng_.Int(layout.nodes);
        round_.threads.push_back({node, false, starter});
      }
    }
    const int threads = static_cast<int>(round_.threads.size());
    holding_.assign(threads, -1);
    held_fresh_.assign(threads, false);
    awaiting_.assign(threads, false);
    lock_holder_.assign(program_.locks, -1);
    requested_.assign(program_.locks, false);
    history_.resize(program_.locations.size());
    const int hot = 2 + rng_.Int(3);
    for (int i = 0; i < hot; ++i) {
      const int loc = rng_.Int(static_cast<int>(program_.locations.size()));
      if (std::count(hot_.begin(), hot_.end(), loc) == 0) hot_.push_back(loc);
    }
    // A large variable is often all one thread's for the round, or all read-only: a phase in
    // which one thread fills it and, after the barrier, every thread reads it (a band of a
    // matrix), so that walks over it fault on page after page.
    std::map<int, Mode> whole;
    for (int v = 0; v < static_cast<int>(layout.variables.size()); ++v) {
      if (layout.variables[v].pages < 8 || !rng_.Chance(50)) continue;
      whole[v] = rng_.Chance(50) ? Mode{Mode::kOwned, rng_.Int(threads)} : Mode{Mode::kShared, -1};
    }
    // Modes for the round: everything before it is ordered before everything in it.
    for (std::size_t loc = 0; loc < program_.locations.size(); ++loc) {
      if (auto one = whole.find(program_.locations[loc].variable); one != whole.end()) {
        mode_.push_back(one->second);
        continue;
      }
      // Hot locations are guarded by a lock more often: many writers, one after another.
      const bool is_hot = std::count(hot_.begin(), hot_.end(), static_cast<int>(loc)) > 0;
      if (is_hot && (static_cast<int>(loc) == hot_.front() || rng_.Chance(60))) {
        mode_.push_back({Mode::kLocked, 0});
        continue;
      }
      const int pick = rng_.Int(100);
      if (pick < 50) {
        mode_.push_back({Mode::kOwned, rng_.Int(threads)});
      } else if (pick < 70) {
        mode_.push_back({Mode::kShared, -1});
      } else {
        mode_.push_back({Mode::kLocked, rng_.Int(program_.locks)});
      }
    }
  }

  Round Make() {
    for (int t = 0; t < static_cast<int>(round_.threads.size()); ++t) {
      if (!round_.threads[t].main) Emit({OpKind::kStart, round_.threads[t].starter, -1, 0, -1, t});
    }
    const int steps = 30 + rng_.Int(120);
    for (int i = 0; i < steps; ++i) Step();
    // Every lock goes back (a handoff's receiver then locks and unlocks it in turn).
    for (bool again = true; again;) {
      again = false;
      for (int t = 0; t < static_cast<int>(round_.threads.size()); ++t) {
        if (holding_[t] >= 0) {
          Unlock(t);
          again = true;
        }
      }
    }
    for (int t = 0; t < static_cast<int>(round_.threads.size()); ++t) {
      if (!round_.threads[t].main) Emit({OpKind::kJoin, round_.threads[t].starter, -1, 0, -1, t});
    }
    for (int node = 0; node < Mains(); ++node) Emit({OpKind::kBarrierAll, node});
    round_.per_thread.assign(round_.threads.size(), {});
    for (std::uint32_t i = 0; i < round_.ops.size(); ++i) {
      round_.ops[i].step = i;
      round_.per_thread[round_.ops[i].thread].push_back(i);
    }
    return std::move(round_);
  }

 private:
  struct Mode {
    enum Kind { kOwned, kShared, kLocked } kind;
    int who;  // the owner, or the lock
  };
  struct Handoff {
    int from;
    int lock;
    int to;
    std::vector<int> locations;
  };

  int Threads() const { return static_cast<int>(round_.threads.size()); }
  int Mains() const {
    return static_cast<int>(std::count_if(round_.threads.begin(), round_.threads.end(),
                                          [](const Thread& t) { return t.main; }));
  }
  void Emit(Op op) { round_.ops.push_back(op); }

  void Step() {
    // The relay's baton holder moves often: its critical sections then run in the order drawn.
    const int t = baton_ >= 0 && rng_.Chance(60) ? baton_ : rng_.Int(Threads());
    const int pick = rng_.Int(100);
    if (t == baton_ && holding_[t] < 0 && !awaiting_[t] && rng_.Chance(70)) {
      Relay(t);
      return;
    }
    if (holding_[t] >= 0) {
      // Critical sections stay short, so that a lock passes between many threads in a round.
      if (pick < 3) {
        Sweep(t);
      } else if (pick < 45) {
        Access(t);
      } else if (pick < 80) {
        Unlock(t);
      } else if (pick < 90) {
        StartHandoff(t);
      } else if (pick < 95) {
        Transfer(t);
      } else {
        BarrierAll();
      }
      return;
    }
    if (pick < 8) {
      Sweep(t);
    } else if (pick < 45) {
      Access(t);
    } else if (pick < 75) {
      Lock(t);
    } else if (pick < 87) {
      Transfer(t);
    } else if (pick < 94) {
      BarrierAll();
    } else {
      NamedBarrier();
    }
  }

  // A critical section on lock 0 (which guards most hot locations), then the baton goes to another
  // thread along a V and its P: the next critical section of the relay is ordered after this one
  // in every execution, as when a program hands data from node to node in a fixed order.
  void Relay(int t) {
    if (lock_holder_[0] >= 0) return;
    Take(t, 0);
    const int accesses = 1 + rng_.Int(3);
    for (int i = 0; i < accesses; ++i) Access(t);
    Unlock(t);
    const int u = rng_.Int(Threads());
    if (u == t || holding_[u] >= 0) return;
    Emit({OpKind::kSemaV, t, -1, 0, -1, u});
    Emit({OpKind::kSemaP, u, -1, 0, -1, t});
    baton_ = u;
  }

  std::vector<int> Owned(int t) const {
    std::vector<int> owned;
    for (int loc = 0; loc < static_cast<int>(mode_.size()); ++loc) {
      if (mode_[loc].kind == Mode::kOwned && mode_[loc].who == t) owned.push_back(loc);
    }
    return owned;
  }

  // Whether thread t may write location loc now (it owns it, or holds its lock), or read it.
  bool MayWrite(int t, int loc) const {
    const Mode& mode = mode_[loc];
    return (mode.kind == Mode::kOwned && mode.who == t) ||
           (mode.kind == Mode::kLocked && mode.who == holding_[t]);
  }
  bool MayRead(int t, int loc) const {
    return MayWrite(t, loc) || mode_[loc].kind == Mode::kShared;
  }

  void Access(int t) {
    std::vector<int> readable;
    std::vector<int> writable;
    for (int loc = 0; loc < static_cast<int>(mode_.size()); ++loc) {
      if (MayWrite(t, loc)) writable.push_back(loc);
      if (MayRead(t, loc)) readable.push_back(loc);
    }
    if (readable.empty()) return;
    const bool write = !writable.empty() && rng_.Chance(50);
    std::vector<int> candidates = write ? writable : readable;
    // Most accesses go to the round's few hot locations, so that their values pass between many
    // threads and writers overwrite one another.
    if (rng_.Chance(80)) {
      std::vector<int> hot;
      for (int loc : candidates) {
        if (std::count(hot_.begin(), hot_.end(), loc) > 0) hot.push_back(loc);
      }
      if (!hot.empty()) candidates = std::move(hot);
    }
    const int loc = rng_.Pick(candidates);
    const bool explicit_copy = rng_.Chance(20);
    if (write) {
      Emit({explicit_copy ? OpKind::kPut : OpKind::kWrite, t, loc, ValueFor(loc, t)});
    } else {
      Emit({explicit_copy ? OpKind::kGet : OpKind::kRead, t, loc});
    }
  }

  // A walk over one variable in address order, forwards or back, every page or every few pages,
  // one access to each page on its way that t may make: the strided faults on which the
  // home-based protocols fetch the pages ahead of a walk (home_based/internal/fault_streams.h).
  void Sweep(int t) {
    const int variable = program_.locations[rng_.Below(program_.locations.size())].variable;
    const bool write = rng_.Chance(40);
    const std::size_t stride = rng_.Chance(70) ? 1 : 2 + rng_.Below(3);
    const std::size_t phase = rng_.Below(stride);
    std::map<std::size_t, int> by_page;  // page -> the first location there t may access
    for (int loc = 0; loc < static_cast<int>(mode_.size()); ++loc) {
      const Location& location = program_.locations[loc];
      if (location.variable != variable || !(write ? MayWrite(t, loc) : MayRead(t, loc))) continue;
      const std::size_t page = location.offset / kPageBytes;
      if (page % stride == phase) by_page.try_emplace(page, loc);
    }
    std::vector<int> walk;
    for (const auto& [page, loc] : by_page) walk.push_back(loc);
    if (rng_.Chance(25)) std::reverse(walk.begin(), walk.end());
    for (int loc : walk) {
      if (write) {
        Emit({OpKind::kWrite, t, loc, ValueFor(loc, t)});
      } else {
        Emit({OpKind::kRead, t, loc});
      }
    }
  }

  // A fresh value, or one the location held before in this round; above all, when another thread
  // wrote the location since, the value this thread wrote last: a write that puts back what the
  // writer's twin holds is one a twin cannot tell from no write at all.
  std::uint64_t ValueFor(int loc, int t) {
    std::vector<std::pair<int, std::uint64_t>>& seen = history_[loc];
    const bool byte = program_.locations[loc].bytes == 1;
    std::optional<std::uint64_t> value;
    auto own =
        std::find_if(seen.rbegin(), seen.rend(), [t](const auto& w) { return w.first == t; });
    if (own != seen.rend() && seen.back().first != t && rng_.Chance(50)) {
      value = own->second;
    } else if (!seen.empty() && rng_.Chance(byte ? 30 : 20)) {
      value = seen[seen.size() - 1 - rng_.Below(std::min<std::size_t>(seen.size(), 3))].second;
    } else {
      const std::uint64_t fresh = Mix(program_.seed ^ Mix(round_.ops.size() + 7919 * loc));
      value = byte ? 1 + fresh % 255 : fresh | 1;
    }
    seen.emplace_back(t, *value);
    return *value;
  }

  void Lock(int t) {
    if (holding_[t] >= 0 || awaiting_[t]) return;
    std::vector<int> free;
    for (int k = 0; k < program_.locks; ++k) {
      if (lock_holder_[k] < 0) free.push_back(k);
    }
    if (free.empty()) return;
    // Lock 0 guards most hot locations: it is asked for most.
    Take(t, lock_holder_[0] < 0 && rng_.Chance(60) ? 0 : rng_.Pick(free));
  }

  void Take(int t, int k) {
    held_fresh_[t] = !requested_[k];
    requested_[k] = true;
    lock_holder_[k] = t;
    holding_[t] = k;
    Emit({OpKind::kLock, t, -1, 0, k});
  }

  void Unlock(int t) {
    const int k = holding_[t];
    Emit({OpKind::kUnlock, t, -1, 0, k});
    lock_holder_[k] = -1;
    holding_[t] = -1;
    held_fresh_[t] = false;
    auto handoff = std::find_if(handoffs_.begin(), handoffs_.end(),
                                [&](const Handoff& h) { return h.from == t && h.lock == k; });
    if (handoff == handoffs_.end()) return;
    // The receiver asked for the lock after it was told the lock was held: it gets it after this
    // release, and with it the locations handed over.
    const Handoff done = *handoff;
    handoffs_.erase(handoff);
    awaiting_[done.to] = false;
    for (int loc : done.locations) mode_[loc] = {Mode::kOwned, done.to};
    Take(done.to, k);
  }

  // Some of t's locations go to u along a V and the matching P.
  void Transfer(int t) {
    const int u = rng_.Int(Threads());
    if (u == t || holding_[u] >= 0) return;
    std::vector<int> given;
    for (int loc : Owned(t)) {
      if (!Promised(loc) && rng_.Chance(50)) given.push_back(loc);
    }
    Emit({OpKind::kSemaV, t, -1, 0, -1, u});
    Emit({OpKind::kSemaP, u, -1, 0, -1, t});
    for (int loc : given) mode_[loc] = {Mode::kOwned, u};
  }

  bool Promised(int loc) const {
    for (const Handoff& h : handoffs_) {
      if (std::find(h.locations.begin(), h.locations.end(), loc) != h.locations.end()) return true;
    }
    return false;
  }

  // t holds a lock and tells u so (V, P); at t's unlock, u locks it next and owns what t handed.
  void StartHandoff(int t) {
    const int k = holding_[t];
    if (k < 0) return;
    for (const Handoff& h : handoffs_) {
      if (h.from == t) return;
    }
    const int u = rng_.Int(Threads());
    if (u == t || holding_[u] >= 0 || awaiting_[u]) return;
    Handoff handoff{t, k, u, {}};
    for (int loc : Owned(t)) {
      if (!Promised(loc) && rng_.Chance(60)) handoff.locations.push_back(loc);
    }
    Emit({OpKind::kSemaV, t, -1, 0, -1, u});
    Emit({OpKind::kSemaP, u, -1, 0, -1, t});
    awaiting_[u] = true;
    handoffs_.push_back(std::move(handoff));
  }

  // The mains meet; a main may hold a lock across it only if nobody asked for that lock before
  // it in this round. The mains' locations may change hands among them.
  void BarrierAll() {
    for (int t = 0; t < Mains(); ++t) {
      if (holding_[t] >= 0 && !held_fresh_[t]) return;
    }
    for (int t = 0; t < Mains(); ++t) Emit({OpKind::kBarrierAll, t});
    for (auto& mode : mode_) {
      if (mode.kind != Mode::kOwned || !round_.threads[mode.who].main) continue;
      if (Promised(static_cast<int>(&mode - mode_.data()))) continue;
      if (rng_.Chance(40)) mode.who = rng_.Int(Mains());
    }
  }

  // Every thread meets, holding no lock; any owned location may change hands.
  void NamedBarrier() {
    for (int t = 0; t < Threads(); ++t) {
      if (holding_[t] >= 0 || awaiting_[t]) return;
    }
    for (int t = 0; t < Threads(); ++t) Emit({OpKind::kBarrier, t});
    for (auto& mode : mode_) {
      if (mode.kind == Mode::kOwned && rng_.Chance(30)) mode.who = rng_.Int(Threads());
    }
  }

  const Program& program_;
  Rng& rng_;
  Round round_;
  std::vector<Mode> mode_;
  std::vector<int> holding_;      // by thread: the lock it holds, or -1
  std::vector<bool> held_fresh_;  // by thread: nobody asked for its lock before it this round
  std::vector<bool> awaiting_;    // by thread: to lock a lock handed to it
  std::vector<int> lock_holder_;  // by lock
  std::vector<bool> requested_;   // by lock: asked for this round
  std::vector<Handoff> handoffs_;
  std::vector<int> hot_;  // the locations most accesses go to
  int baton_ = 0;         // the thread whose turn it is in the relay on lock 0
  std::vector<std::vector<std::pair<int, std::uint64_t>>>
      history_;  // writer and value, by location
};

}  // namespace

const char* OpName(OpKind kind) {
  switch (kind) {
    case OpKind::kRead: return "read";
    case OpKind::kWrite: return "write";
    case OpKind::kGet: return "lmdx_get";
    case OpKind::kPut: return "lmdx_put";
    case OpKind::kLock: return "lock";
    case OpKind::kUnlock: return "unlock";
    case OpKind::kSemaV: return "V";
    case OpKind::kSemaP: return "P";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kBarrierAll: return "lmdx_barrier_all";
    case OpKind::kStart: return "start";
    case OpKind::kJoin: return "join";
  }
  return "?";
}

std::string Layout::ConfigText() const {
  std::string text = "dsm {\n";
  for (const Variable& variable : variables) {
    text += "  region { name: \"" + variable.name + "\" protocol: " + Upper(variable.protocol) +
            " home: " + variable.home + " }\n";
  }
  return text + "}\n";
}

Layout MakeLayout(std::uint64_t seed, const std::string& protocol, int programs) {
  const bool mixed = protocol == "mixed";
  if (!mixed && std::find(kProtocols.begin(), kProtocols.end(), protocol) == kProtocols.end()) {
    throw std::invalid_argument("unknown protocol \"" + protocol +
                                "\" (sc, update, rc, lrc, hlrc or mixed)");
  }
  Rng rng(seed);
  Layout layout;
  layout.seed = seed;
  layout.programs = programs;
  layout.nodes = 2 + rng.Int(3);
  layout.os_threads = rng.Chance(40);
  for (int node = 0; node < layout.nodes; ++node) {
    layout.threads_per_node.push_back(1 + rng.Int(kMaxThreadsPerNode));
  }
  const int variables = (mixed ? 2 : 1) + rng.Int(2);
  const std::size_t first = rng.Below(kProtocols.size());
  for (int v = 0; v < variables; ++v) {
    layout.variables.push_back(
        {"fz_v" + std::to_string(v), rng.Chance(30) ? 8 + rng.Below(25) : 1 + rng.Below(3),
         mixed ? kProtocols[(first + static_cast<std::size_t>(v)) % kProtocols.size()] : protocol,
         rng.Pick(kHomes)});
  }
  return layout;
}

Program MakeProgram(const Layout& layout, int index) {
  Program program;
  program.seed = Mix(layout.seed * 1000003 + static_cast<std::uint64_t>(index));
  program.index = index;
  Rng rng(program.seed);
  program.locations = MakeLocations(layout, rng);
  program.locks = 1 + rng.Int(3);
  const int rounds = 1 + rng.Int(3);
  for (int r = 0; r < rounds; ++r)
    program.rounds.push_back(RoundMaker(layout, program, rng).Make());
  return program;
}

std::string DescribeThread(const Layout& layout, const Round& round, int thread) {
  const Thread& t = round.threads.at(static_cast<std::size_t>(thread));
  std::string text = "thread " + std::to_string(thread) + " (node " + std::to_string(t.node);
  if (t.main) return text + ", its main thread)";
  if (layout.os_threads) return text + ", an OS thread of its main)";
  return text + ", an LMDX thread started by node " + std::to_string(t.starter) + "'s main)";
}

std::string SemaphoreName(int from, int to) {
  return "fz_s" + std::to_string(from) + "_" + std::to_string(to);
}
std::string LockName(int lock) { return "fz_l" + std::to_string(lock); }
std::string BarrierName(int program, int round) {
  return "fz_b" + std::to_string(program) + "_" + std::to_string(round);
}

}  // namespace lmdx::drf
