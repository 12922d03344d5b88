// How much CPU other processes took while a benchmark job ran. Both ranks of a ping-pong poll
// for messages; on a machine with two cores any other busy process (a compiler, another job)
// steals their time slices, and latencies grow from microseconds to milliseconds. The driver
// uses this to say so next to the figures instead of letting them pass for the real thing.
#ifndef LMDX_BENCHMARKS_NET_OTHER_LOAD_H_
#define LMDX_BENCHMARKS_NET_OTHER_LOAD_H_

namespace lmdx::bench {

class OtherLoadMeter {
 public:
  OtherLoadMeter();  // starts measuring
  // Average number of cores kept busy by processes other than this one and its waited-for
  // descendants since construction; 0 when /proc/stat cannot be read.
  double cores_used_by_others() const;

 private:
  double start_busy_s_;
  double start_children_s_;
  double start_wall_s_;
};

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_OTHER_LOAD_H_
