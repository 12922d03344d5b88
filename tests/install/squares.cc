// The C++ API and lmdxpp's dialect, built by CMake against an installed LMDX: threads on every
// node fill a shared table; main checks it.
#include <cstdio>
#include <lmdx/lmdx.hpp>

LMDX_shared long squares[64];

int main() {
  {
    std::vector<lmdx::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back(t % lmdx::size(), [t] {
        for (int i = t; i < 64; i += 4) squares[i] = static_cast<long>(i) * i;
      });
    }
  }
  long sum = 0;
  for (int i = 0; i < 64; ++i) sum += squares[i];
  std::printf("%s: sum of squares %ld\n", sum == 85344 ? "verified" : "WRONG", sum);
}
