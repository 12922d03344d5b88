// lmdxpp on C++: shared variables in a namespace, used from templates, lambdas and member
// functions; a thread function with a result; main with arguments. Prints "constructs ok".
#include <array>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>

namespace physics {

struct Particle {
  double x, v;
};

constexpr int kParticles = 600;  // 9,600 bytes: three pages
LMDX_shared Particle particles[kParticles];
LMDX_shared std::int64_t steps_done;

template <typename T, std::size_t N>
double Sum(const T (&values)[N]) {
  double sum = 0;
  for (const T& p : values) sum += p.x;
  return sum;
}

class Stepper {
 public:
  explicit Stepper(int first) : first_(first) {}
  void Step(int stride) const {
    for (int i = first_; i < kParticles; i += stride) particles[i].x += particles[i].v;
  }

 private:
  int first_;
};

}  // namespace physics

LMDX_thread advance(void* arg) {
  auto first = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
  physics::Stepper(first).Step(3);
  LMDX_lock(steps);
  physics::steps_done += 1;
  LMDX_unlock(steps);
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(first * 2));
}

int main(int argc, char** argv) {
  using physics::particles;
  static_assert(sizeof particles == physics::kParticles * sizeof(physics::Particle));
  auto init = [](int i) { particles[i] = {double(i), 0.5}; };
  for (int i = 0; i < physics::kParticles; ++i) init(i);
  std::array<lmdx_thread_t, 3> threads{};
  for (int t = 0; t < 3; ++t) {
    threads[t] = LMDX_start_thread(advance, reinterpret_cast<void*>(static_cast<std::intptr_t>(t)));
  }
  bool ok = true;
  for (int t = 0; t < 3; ++t) {
    ok &=
        LMDX_join_thread(threads[t]) == reinterpret_cast<void*>(static_cast<std::intptr_t>(t * 2));
  }
  double expected = 0;
  for (int i = 0; i < physics::kParticles; ++i) expected += i + 0.5;
  ok &= physics::Sum(particles) == expected;
  ok &= physics::steps_done == 3;
  ok &= argc == 2 && std::string(argv[1]) == "--check";
  if (!ok) {
    std::printf("FAILED: sum %f (expected %f), steps %ld, argc %d\n", physics::Sum(particles),
                expected, static_cast<long>(physics::steps_done), argc);
    return 1;
  }
  std::printf("constructs ok on %d nodes\n", lmdx_size());
  return 0;
}
