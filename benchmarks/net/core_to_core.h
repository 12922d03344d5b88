// How fast the machine moves a cache line from one core to another, right now. A ping-pong of
// small messages through shared memory costs a few such moves per message, so its latency
// follows this figure more than any software does. On a virtual machine the host may run two
// vCPUs on neighbouring cores or on distant ones, and moves them within seconds: on the machine
// this was built on, one move took 50 ns or 210 ns, and an 8 B ping-pong over vader 0.10 or
// 0.37 us with it. The driver measures it around every job, so that LMDX and MPI figures are
// compared only when they were taken in the same state of the machine.
#ifndef LMDX_BENCHMARKS_NET_CORE_TO_CORE_H_
#define LMDX_BENCHMARKS_NET_CORE_TO_CORE_H_

#include <optional>
#include <string>

namespace lmdx::bench {

// The median time, in ns, for one cache line to go one way between two threads pinned to the
// first two CPUs this process may use; nothing when it may use fewer than two. Takes 10-50 ms;
// the calling thread's own CPU affinity is left as it was (children inherit it).
std::optional<double> measure_core_to_core_ns();

// The figures taken just before and just after one job.
struct MachineState {
  std::optional<double> before_ns;
  std::optional<double> after_ns;
};

// Two figures within this factor of each other are one state of the machine; the two states
// seen here differ by 4x, while repeated measurements of one vary by a few percent.
inline constexpr double kSameStateFactor = 1.5;

// The machine stayed in one state through the job (both figures known and alike).
bool steady(const MachineState& state);
// Both jobs ran throughout in one and the same state, so their figures may be compared.
bool same_state(const MachineState& a, const MachineState& b);
// "49 ns", or "49->210 ns" for a job during which the machine changed, or "?" when unknown.
std::string describe(const MachineState& state);

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_CORE_TO_CORE_H_
