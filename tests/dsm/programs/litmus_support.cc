#include "tests/dsm/programs/litmus_support.h"

#include <cstdlib>
#include <thread>

namespace lmdx::litmus {

int rank_ = -1;
int size_ = 0;
std::string scenario_;

void Die(const std::string& what) {
  std::string text = "rank " + std::to_string(rank_) + ": FAILED: " + scenario_ + ": " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Ok(int code, const std::string& call) {
  if (code != LMDX_OK) Die(call + " returned " + std::to_string(code));
}

void Barrier() { Ok(lmdx_barrier_all(), "lmdx_barrier_all"); }
void Lock(const std::string& name) { Ok(lmdx_lock(name.c_str()), "lmdx_lock " + name); }
void Unlock(const std::string& name) { Ok(lmdx_unlock(name.c_str()), "lmdx_unlock " + name); }
void SemaInit(const std::string& name, int value) {
  Ok(lmdx_sema_init(name.c_str(), value), "lmdx_sema_init " + name);
}
void P(const std::string& name) { Ok(lmdx_sema_p(name.c_str()), "lmdx_sema_p " + name); }
void V(const std::string& name) { Ok(lmdx_sema_v(name.c_str()), "lmdx_sema_v " + name); }
void NamedBarrier() { Ok(lmdx_barrier("litmus_barrier"), "lmdx_barrier"); }

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t Hash(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return Mix(a ^ Mix(b ^ Mix(c)));
}

std::string At(int iteration) { return "iteration " + std::to_string(iteration); }

void Spin::Pause() {
  std::this_thread::yield();
  if (++rounds_ % 256 == 0 &&
      std::chrono::steady_clock::now() - start_ > std::chrono::seconds(60)) {
    Die("waited 60 s for " + what_);
  }
}

void AwaitFlagUnderLock(const std::string& lock, const std::uint64_t* flag, std::uint64_t want) {
  Spin spin("flag " + std::to_string(want) + " under " + lock);
  for (;;) {
    Lock(lock);
    std::uint64_t seen = *flag;
    Unlock(lock);
    if (seen == want) return;
    if (seen != want - 1) Expect("the flag under " + lock, 0, want, seen);
    spin.Pause();
  }
}

}  // namespace lmdx::litmus
