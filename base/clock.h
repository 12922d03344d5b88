#ifndef LMDX_BASE_CLOCK_H_
#define LMDX_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace lmdx {

// CLOCK_MONOTONIC in nanoseconds: cheap (a vDSO call), for deadlines and spin budgets.
inline std::int64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

inline std::int64_t MonotonicMs() { return MonotonicNs() / 1000000; }

}  // namespace lmdx

#endif  // LMDX_BASE_CLOCK_H_
