// The measures of the cluster study LMDX grows from (seed 001), shared by the LMDX and MPI
// versions of `lmdx bench overlap`, so that both time exactly the same pattern and differ only in
// the calls that start and complete a message:
//   - the send and receive overheads o_s and o_r: what a send costs its caller with the network
//     idle, and what a receive costs once its message is there;
//   - the gap g: the time per message of a stream of them, and G, its growth per byte;
//   - the latency L: half a round trip less both overheads (LogP's L);
//   - overlap: how much of an exchange's time a computation between post and wait hides.
#ifndef LMDX_BENCHMARKS_NET_OVERLAP_COMMON_H_
#define LMDX_BENCHMARKS_NET_OVERLAP_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lmdx::bench {

// Non-blocking messages with the one peer (ranks 0 and 1).
class OverlapChannel {
 public:
  virtual ~OverlapChannel() = default;
  virtual int rank() = 0;
  // Each returns a slot that wait completes. Tag 0 carries the measured messages, tag 1 the
  // phases' own handshakes, so that neither is taken for the other.
  virtual int isend(const void* buf, std::size_t len, int tag) = 0;
  virtual int irecv(void* buf, std::size_t cap, int tag) = 0;
  virtual void wait(int slot) = 0;
  [[noreturn]] virtual void fail(const std::string& message) = 0;
};

struct OverlapOptions {
  std::vector<std::uint64_t> sizes = {8, 64, 1024, 8192, 65536, 1 << 20};
  // Each phase of each size aims at this long.
  double target_ms = 40.0;
};

// Runs every phase for every size on both ranks; rank 0 prints one line per size:
//   overlap size=S rtt2_us=.. os_us=.. or_us=.. g_us=.. L_us=.. overlap_pct=..
void MeasureOverlap(OverlapChannel& channel, const OverlapOptions& options);

// --quick: three sizes and short phases, every path in seconds (figures meaningless).
OverlapOptions QuickOverlapOptions();

}  // namespace lmdx::bench

#endif  // LMDX_BENCHMARKS_NET_OVERLAP_COMMON_H_
