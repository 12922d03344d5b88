#include "consistency/home_based/internal/fault_streams.h"

#include <algorithm>

namespace lmdx::consistency::internal {

std::int64_t FaultStreams::StepsAlong(const Stream& stream, PageId page) {
  if (stream.used == 0 || stream.stride == 0) return 0;
  const auto distance = static_cast<std::int64_t>(page - stream.last);
  if (distance % stream.stride != 0) return 0;
  const std::int64_t steps = distance / stream.stride;
  const std::int64_t reach = static_cast<std::int64_t>(stream.next - stream.last) / stream.stride;
  // A page fetched ahead may fault again (invalidated since, or busy when the stream fetched), and
  // a walk may skip a few pages past the window (pages it did not need, or held already): still
  // the walk. A young stream takes only its next page.
  const std::int64_t slack = stream.depth == 0 ? 0 : std::max<std::int64_t>(2, stream.depth / 4);
  return steps >= 1 && steps <= reach + slack ? steps : 0;
}

FaultStreams::Ahead FaultStreams::OnFault(PageId page) {
  std::lock_guard lock(mutex_);
  const std::uint64_t now = ++clock_;
  for (Stream& stream : streams_) {
    const std::int64_t steps = StepsAlong(stream, page);
    if (steps == 0) continue;
    Ahead ahead;
    // At or past the window's end: the walk went through the pages fetched ahead.
    const std::int64_t reach = static_cast<std::int64_t>(stream.next - stream.last) / stream.stride;
    if (stream.depth > 0 && steps >= reach) ahead.confirmed = stream.depth;
    stream.depth = stream.depth == 0 ? kFirstDepth : std::min(2 * stream.depth, kMaxDepth);
    stream.last = page;
    stream.next =
        page + static_cast<PageId>(static_cast<std::int64_t>(stream.depth + 1) * stream.stride);
    stream.used = now;
    ahead.stride = stream.stride;
    ahead.count = stream.depth;
    return ahead;
  }
  // Not the next of a walk: the nearest young stream (one fault, or two that no third followed)
  // takes the stride from its newest fault to this one; else the least recently used slot starts
  // a stream here.
  Stream* nearest = nullptr;
  std::int64_t nearest_distance = kMaxStride + 1;
  for (Stream& stream : streams_) {
    if (stream.used == 0 || stream.depth > 0) continue;
    const auto distance = static_cast<std::int64_t>(page - stream.last);
    const std::int64_t size = distance < 0 ? -distance : distance;
    if (size == 0) {
      stream.used = now;  // the same page again: nothing learnt
      return {};
    }
    if (size < nearest_distance) {
      nearest = &stream;
      nearest_distance = size;
    }
  }
  if (nearest != nullptr) {
    nearest->stride = static_cast<std::int64_t>(page - nearest->last);
    nearest->last = page;
    nearest->next = page + static_cast<PageId>(nearest->stride);
    nearest->used = now;
    return {};
  }
  Stream& oldest =
      *std::min_element(streams_.begin(), streams_.end(),
                        [](const Stream& a, const Stream& b) { return a.used < b.used; });
  oldest = Stream{.last = page, .stride = 0, .next = page, .depth = 0, .used = now};
  return {};
}

}  // namespace lmdx::consistency::internal
