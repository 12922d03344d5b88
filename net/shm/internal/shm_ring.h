#ifndef LMDX_NET_SHM_INTERNAL_SHM_RING_H_
#define LMDX_NET_SHM_INTERNAL_SHM_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lmdx::net::internal {

// A single-producer single-consumer byte ring in memory shared by two processes. Frames are
// written into it as a stream, exactly as they would go into a socket.
//
// The writer owns `head`, the reader owns `tail`; both only grow (bytes ever written and read), so
// the ring is full when head - tail == capacity. A side that is about to sleep says so in a flag
// (reader_asleep, writer_asleep) and re-checks the ring; the other side signals the sleeper's
// eventfd only when it finds its flag set. A fence between the index store and the flag load on
// one side, and the flag store and the index load on the other, makes the pair of checks
// sequentially consistent, so no wake-up is lost.
struct RingControl {
  alignas(64) std::atomic<std::uint64_t> head{0};
  alignas(64) std::atomic<std::uint64_t> tail{0};
  alignas(64) std::atomic<std::uint32_t> reader_asleep{0};
  alignas(64) std::atomic<std::uint32_t> writer_asleep{0};
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// One direction of a pair: the control block and `capacity` bytes of data (a power of two).
class Ring {
 public:
  Ring() = default;
  Ring(RingControl* control, std::uint8_t* data, std::uint64_t capacity)
      : control_(control), data_(data), capacity_(capacity) {}

  // Writer side. Room for how many bytes, at least: the reader's position is read again only when
  // the last one seen leaves less than a quarter of the ring, since every read of it is a cache
  // miss on the line the reader writes (and takes the line from the reader's core).
  std::uint64_t Room() {
    std::uint64_t head = control_->head.load(std::memory_order_relaxed);
    if (capacity_ - (head - seen_tail_) < capacity_ / 4) {
      seen_tail_ = control_->tail.load(std::memory_order_acquire);
    }
    return capacity_ - (head - seen_tail_);
  }
  // Room from the reader's position as it is now, for a writer deciding whether to sleep.
  std::uint64_t FreshRoom() {
    seen_tail_ = control_->tail.load(std::memory_order_acquire);
    return capacity_ - (control_->head.load(std::memory_order_relaxed) - seen_tail_);
  }
  // Copies size bytes (at most Room()) at the write position `offset` bytes past the published
  // head; Publish makes them visible.
  void Put(std::uint64_t offset, const void* data, std::uint64_t size) {
    std::uint64_t at = (control_->head.load(std::memory_order_relaxed) + offset) & (capacity_ - 1);
    std::uint64_t first = size < capacity_ - at ? size : capacity_ - at;
    std::memcpy(data_ + at, data, first);
    if (first < size)
      std::memcpy(data_, static_cast<const std::uint8_t*>(data) + first, size - first);
  }
  // Publishes size more bytes; true when the reader sleeps and must be signalled.
  bool Publish(std::uint64_t size) {
    control_->head.store(control_->head.load(std::memory_order_relaxed) + size,
                         std::memory_order_release);
    return ReaderMustBeSignalled();
  }
  // After the writer made something visible to the reader by a store of its own (a cell,
  // net/shm/internal/shm_cells.h): true when the reader sleeps and must be signalled.
  bool ReaderMustBeSignalled() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return control_->reader_asleep.load(std::memory_order_relaxed) != 0 &&
           control_->reader_asleep.exchange(0, std::memory_order_acq_rel) != 0;
  }
  // True when the reader has taken every byte written: what the writer checks before it puts a
  // frame anywhere but the ring. The reader's position is read only when the last one seen lags.
  bool AllTaken() {
    std::uint64_t head = control_->head.load(std::memory_order_relaxed);
    if (seen_tail_ != head) seen_tail_ = control_->tail.load(std::memory_order_acquire);
    return seen_tail_ == head;
  }
  // The writer is going to sleep until there is room for `wanted` bytes, the way `how` says
  // (kSleepsOnFutex, kSleepsOnEventfd); false when there is room already (then it must not).
  static constexpr std::uint32_t kSleepsOnFutex = 1;
  static constexpr std::uint32_t kSleepsOnEventfd = 2;
  bool WriterSleeps(std::uint64_t wanted, std::uint32_t how) {
    control_->writer_asleep.store(how, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (FreshRoom() >= wanted) {
      control_->writer_asleep.store(0, std::memory_order_relaxed);
      return false;
    }
    return true;
  }

  // Reader side. How many bytes are there to read.
  std::uint64_t Available() const {
    return control_->head.load(std::memory_order_acquire) -
           control_->tail.load(std::memory_order_relaxed);
  }
  // Copies size bytes (at most Available() - offset) from `offset` bytes past the read position.
  void Get(std::uint64_t offset, void* out, std::uint64_t size) const {
    std::uint64_t at = (control_->tail.load(std::memory_order_relaxed) + offset) & (capacity_ - 1);
    std::uint64_t first = size < capacity_ - at ? size : capacity_ - at;
    std::memcpy(out, data_ + at, first);
    if (first < size) std::memcpy(static_cast<std::uint8_t*>(out) + first, data_, size - first);
  }
  // Frees size bytes; returns how the writer sleeps (0: it does not) when it must be signalled.
  std::uint32_t Consume(std::uint64_t size) {
    control_->tail.store(control_->tail.load(std::memory_order_relaxed) + size,
                         std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (control_->writer_asleep.load(std::memory_order_relaxed) == 0) return 0;
    return control_->writer_asleep.exchange(0, std::memory_order_acq_rel);
  }
  // The word a writer sleeping on a futex waits on (it is 0 once woken).
  std::atomic<std::uint32_t>* writer_flag() { return &control_->writer_asleep; }
  // Nobody polls this ring for now: the writer must signal. True when data is already there.
  bool ArmReader() {
    control_->reader_asleep.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Available() > 0;
  }
  // Writes only when armed: a store to the flag takes its line from the writer, which reads it
  // on every publish.
  void DisarmReader() {
    if (control_->reader_asleep.load(std::memory_order_relaxed) != 0) {
      control_->reader_asleep.store(0, std::memory_order_relaxed);
    }
  }

  std::uint64_t capacity() const { return capacity_; }

 private:
  RingControl* control_ = nullptr;
  std::uint8_t* data_ = nullptr;
  std::uint64_t capacity_ = 0;
  std::uint64_t seen_tail_ = 0;  // writer only: the reader's position when last read
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_SHM_INTERNAL_SHM_RING_H_
