// Faults that walk memory at a constant stride: a sweep over an array (stride 1 page), a column
// of a row-major matrix (stride: a row's pages), a transpose. Pages move one fault at a time
// otherwise, and a remote fault costs 30-170 µs here against a few µs to move the page itself, so
// once a walk shows itself (three faults at one stride) each of its further faults brings the
// next pages of the walk along, twice as many at each fault up to a limit: n remote pages cost
// about log2(n) + n / kMaxDepth faults instead of n.
//
// A handful of streams are followed at once (threads of a node walk different arrays, a kernel
// reads two matrices), the least recently used one making room for a new walk. A fault that is
// not the next of any stream starts one, or gives the nearest young stream its stride.
#ifndef LMDX_CONSISTENCY_HOME_BASED_INTERNAL_FAULT_STREAMS_H_
#define LMDX_CONSISTENCY_HOME_BASED_INTERNAL_FAULT_STREAMS_H_

#include <array>
#include <cstdint>
#include <mutex>

#include "consistency/protocol.h"

namespace lmdx::consistency::internal {

class FaultStreams {
 public:
  // The pages worth fetching along with a fault: page + stride, ..., page + count * stride.
  struct Ahead {
    std::int64_t stride = 0;
    std::uint32_t count = 0;
    // Pages an earlier fault of this stream fetched ahead, which the walk has gone through
    // since (it faulted just past them): the fetch ahead was used.
    std::uint32_t confirmed = 0;
  };
  // Pages a stride may span: a column walk of a matrix whose rows are at most this many pages.
  static constexpr std::int64_t kMaxStride = 64;
  static constexpr std::uint32_t kFirstDepth = 4;
  static constexpr std::uint32_t kMaxDepth = 128;  // 512 KiB of 4 KiB pages per fetch

  // A fault on page that this node is about to fetch from another node.
  Ahead OnFault(PageId page);

 private:
  struct Stream {
    PageId last = 0;          // its newest fault
    std::int64_t stride = 0;  // 0 until a second fault near last
    PageId next = 0;          // where its next fault is expected: past the pages fetched ahead
    std::uint32_t depth = 0;  // pages fetched ahead at its newest fault; 0 before the third
    std::uint64_t used = 0;   // when it last took a fault (0: empty slot)
  };
  static constexpr std::size_t kStreams = 8;
  // How many strides past the stream's newest fault page lies, when it continues the stream (on
  // its stride line, past its newest fault, not far past its window); 0 when it does not.
  static std::int64_t StepsAlong(const Stream& stream, PageId page);

  std::mutex mutex_;
  std::array<Stream, kStreams> streams_{};
  std::uint64_t clock_ = 0;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_FAULT_STREAMS_H_
