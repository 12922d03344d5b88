// What the litmus scenarios share: the job's rank and size, failing with a line that names the
// rank, the scenario and what differs, shared variables, and words checked against a sequential
// reference. Scenarios live in files by theme (litmus.cc, lazy_scenarios.cc); litmus.cc runs one.
#ifndef LMDX_TESTS_DSM_PROGRAMS_LITMUS_SUPPORT_H_
#define LMDX_TESTS_DSM_PROGRAMS_LITMUS_SUPPORT_H_

#include <lmdx/lmdx.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lmdx::litmus {

extern int rank_;
extern int size_;
extern std::string scenario_;

constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kPageWords = kPageBytes / sizeof(std::uint64_t);

[[noreturn]] void Die(const std::string& what);
void Ok(int code, const std::string& call);

// `what` is a string or, in loops over every byte, a function that makes one only on failure.
// Unsigned chars are promoted so that bytes print as numbers.
template <typename What, typename T>
void Expect(const What& what, std::size_t index, T expected, T got) {
  if (expected == got) return;
  std::string text;
  if constexpr (std::is_invocable_v<What>) {
    text = what();
  } else {
    text = what;
  }
  Die(text + ", index " + std::to_string(index) + ": expected " + std::to_string(+expected) +
      ", got " + std::to_string(+got));
}

template <typename T>
T* Var(const std::string& name, std::size_t count) {
  auto* data = static_cast<T*>(lmdx_shared_var(name.c_str(), count * sizeof(T)));
  if (data == nullptr) Die("lmdx_shared_var " + name);
  return data;
}

void Barrier();
void Lock(const std::string& name);
void Unlock(const std::string& name);
void SemaInit(const std::string& name, int value);
void P(const std::string& name);
void V(const std::string& name);
// A named barrier of all nodes beside lmdx_barrier_all: another path for the payloads.
void NamedBarrier();

std::uint64_t Mix(std::uint64_t x);
std::uint64_t Hash(std::uint64_t a, std::uint64_t b, std::uint64_t c);
std::string At(int iteration);

// Waiting for another node's progress: gives the core away (2 cores carry up to 8 nodes here) and
// ends the job, rather than hanging it, when the wait is hopeless.
class Spin {
 public:
  explicit Spin(std::string what) : what_(std::move(what)) {}
  void Pause();

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  unsigned rounds_ = 0;
};

// Waits until *flag, which is only touched under lock, reads want. The flag goes up by one per
// iteration, so any other value than want - 1 is itself a failure.
void AwaitFlagUnderLock(const std::string& lock, const std::uint64_t* flag, std::uint64_t want);

// Shared words and their sequential reference. Each iteration rewrites a subset that changes
// from iteration to iteration (every fourth iteration all of it), so words left alone must keep
// their older values too: a stale diff or a lost one shows either way. Every value is unique and
// remembered, so a difference says which iteration wrote what was read.
class Words {
 public:
  Words(const std::string& name, std::size_t count)
      : name_(name), data_(Var<std::uint64_t>(name, count)), reference_(count, 0) {}

  static bool Touched(int iteration, std::size_t i, std::uint64_t salt) {
    return iteration % 4 == 0 || Hash(static_cast<std::uint64_t>(iteration), i, salt) % 3 == 0;
  }
  std::uint64_t Value(int iteration, std::size_t i) const {
    return Hash(static_cast<std::uint64_t>(iteration), i, salt_ + 1000) | 1;
  }

  // Every node advances the reference; the writer also stores (from `first`, `count` words).
  void Advance(int iteration, bool store, std::size_t first = 0, std::size_t count = SIZE_MAX) {
    std::size_t end = count == SIZE_MAX ? reference_.size() : first + count;
    for (std::size_t i = first; i < end; ++i) {
      if (Touched(iteration, i, salt_)) Set(iteration, i, store);
    }
  }

  // Word i takes iteration's value; the node that owns it also stores it.
  void Set(int iteration, std::size_t i, bool store) {
    reference_[i] = Value(iteration, i);
    origin_[reference_[i]] = iteration;
    if (store) data_[i] = reference_[i];
  }

  void Verify(const std::string& when) const {
    for (std::size_t i = 0; i < reference_.size(); ++i) {
      if (data_[i] != reference_[i]) Report(when);
    }
  }

  std::size_t size() const { return reference_.size(); }

 private:
  [[noreturn]] void Report(const std::string& when) const {
    std::string text = name_ + " " + when + " differs:";
    std::size_t differing = 0;
    std::set<std::uintptr_t> pages;
    const auto first_page = reinterpret_cast<std::uintptr_t>(data_) / kPageBytes;
    for (std::size_t i = 0; i < reference_.size(); ++i) {
      const std::uint64_t got = data_[i];
      if (got == reference_[i]) continue;
      const std::uintptr_t page = reinterpret_cast<std::uintptr_t>(&data_[i]) / kPageBytes;
      pages.insert(page);
      if (++differing > 4) continue;
      auto origin = origin_.find(got);
      text += " [index " + std::to_string(i) + " (page +" + std::to_string(page - first_page) +
              "): expected " + std::to_string(reference_[i]) + ", got " + std::to_string(got) +
              (got == 0 ? " (the initial zero)"
               : origin != origin_.end()
                   ? " (written in iteration " + std::to_string(origin->second) + ")"
                   : " (never written as a whole: a mix of bytes?)") +
              "]";
    }
    Die(text + " (" + std::to_string(differing) + " words on " + std::to_string(pages.size()) +
        " pages differ)");
  }

  std::string name_;
  std::uint64_t* data_;
  std::vector<std::uint64_t> reference_;
  std::unordered_map<std::uint64_t, int> origin_;  // every value written, by iteration
  std::uint64_t salt_ = std::hash<std::string>{}(name_);
};

}  // namespace lmdx::litmus

#endif  // LMDX_TESTS_DSM_PROGRAMS_LITMUS_SUPPORT_H_
