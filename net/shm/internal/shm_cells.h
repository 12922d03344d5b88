#ifndef LMDX_NET_SHM_INTERNAL_SHM_CELLS_H_
#define LMDX_NET_SHM_INTERNAL_SHM_CELLS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/small_copy.h"

namespace lmdx::net::internal {

// A small frame in a cell of two cache lines: the stamp that says it is written, then the frame's
// bytes (header, body, payload), as the byte ring would carry them. A frame of up to 60 bytes (an
// 8-byte raw message) lies in the stamp's line alone; up to 124 (a 64-byte one) it takes the next
// line too.
//
// Why cells beside the byte ring (net/shm/internal/shm_ring.h): a reader of the byte ring learns of a
// frame from the writer's head index and then reads the frame from another line, and on these VMs
// each line that moves between cores costs about 300 ns. A reader polling a cell learns of the
// frame and reads it in the same line: one transfer per small frame, as few as a message between
// two cores can take.
struct alignas(64) ShmCell {
  // The number of the frame in the cells' stream plus one (mod 2^32) once its bytes are written:
  // a cell left from an earlier lap has a number kCells lower, so no cell needs clearing.
  std::atomic<std::uint32_t> stamp;
  std::uint8_t bytes[124];
};
static_assert(sizeof(ShmCell) == 128);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// How many cells the reader has taken, on a line of its own: the writer reads it only when it
// runs short of cells, since each read takes the line from the reader's core.
struct CellControl {
  alignas(64) std::atomic<std::uint64_t> taken{0};
};

// One direction's cells: single producer, single consumer, in memory the two processes share.
// Order with the byte ring is kept by the writer, which puts a frame in cells only when the
// reader has taken every byte written to the ring before it (ShmConnection::WriteAlone), and by
// the reader, which looks at the ring's head before it takes cells (ShmConnection::Poll).
//
// A frame larger than a cell spans cells in a row, up to kMaxSpan (992 bytes: the DSM's small
// diffs and write notices, raw messages of a few hundred bytes). Through the byte ring such a
// frame took twice as long as OpenMPI's vader (0.44 µs against 0.23 at 512 bytes): the reader
// learnt of it from the head's line, read it through the frame reader's states and handed the room
// back through the tail's line, and the writer claimed the writer role to write it. In cells it
// takes 0.31-0.33 µs. Longer spans lost to the ring (1900 bytes: 0.65 µs against 0.53), as the
// reader copies a span out whole only once it is all written, and then copies it again into the
// receive; the ring's two copies overlap. Only the first cell of a span is stamped, last: the
// reader looks at no other cell before it has seen that stamp.
class CellRing {
 public:
  static constexpr std::uint32_t kCells = 128;
  static constexpr std::size_t kFrameBytes = sizeof(ShmCell::bytes);
  static constexpr std::uint32_t kMaxSpan = 8;
  static constexpr std::size_t kSpanBytes = kMaxSpan * kFrameBytes;
  // The control line, then the cells.
  static constexpr std::size_t kAreaSize = 64 + kCells * sizeof(ShmCell);

  // How many cells a frame of this many bytes spans (bytes <= kSpanBytes).
  static constexpr std::uint32_t CellsFor(std::size_t bytes) {
    return bytes <= kFrameBytes
               ? 1
               : static_cast<std::uint32_t>((bytes + kFrameBytes - 1) / kFrameBytes);
  }

  CellRing() = default;
  // area: kAreaSize bytes, 64-byte aligned, zero or as a peer left it.
  explicit CellRing(void* area)
      : control_(static_cast<CellControl*>(area)),
        cells_(reinterpret_cast<ShmCell*>(static_cast<std::uint8_t*>(area) + 64)) {}
  static void Initialize(void* area) { new (area) CellControl(); }

  // Writer side. True when `cells` cells are free; the reader's count is read again only when
  // fewer than a quarter of the cells seem free.
  bool HasRoom(std::uint32_t cells = 1) {
    if (written_ + cells - seen_taken_ > kCells - kCells / 4) {
      seen_taken_ = control_->taken.load(std::memory_order_acquire);
    }
    return written_ + cells - seen_taken_ <= kCells;
  }
  // Copies size bytes at offset into the frame being written from the next cell on, across as
  // many cells as it takes (offset + size <= kSpanBytes).
  void Put(std::size_t offset, const void* data, std::size_t size) {
    if (offset + size <= kFrameBytes) {
      std::memcpy(Next() + offset, data, size);
      return;
    }
    const auto* in = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
      std::size_t at = offset % kFrameBytes;
      std::size_t take = size < kFrameBytes - at ? size : kFrameBytes - at;
      std::memcpy(Cell(written_ + offset / kFrameBytes).bytes + at, in, take);
      in += take;
      offset += take;
      size -= take;
    }
  }
  // The next cell's kFrameBytes, for a writer that encodes in place.
  std::uint8_t* Next() { return Cell(written_).bytes; }
  // The frame's bytes are all in the next `cells` cells: the reader may take them.
  void Publish(std::uint32_t cells = 1) {
    Cell(written_).stamp.store(Stamp(written_), std::memory_order_release);
    written_ += cells;
  }

  // Reader side. The next frame's first cell, or nullptr while it is not written. Arming asks
  // it while a poll may take cells (ProgressEngine::Poller), so next_ is read and written
  // atomically (a plain load and store on x86); arming only compares the pointer with nullptr.
  const std::uint8_t* Peek() const {
    std::uint64_t next = std::atomic_ref(next_).load(std::memory_order_relaxed);
    const ShmCell& cell = Cell(next);
    if (cell.stamp.load(std::memory_order_acquire) != Stamp(next)) return nullptr;
    return cell.bytes;
  }
  // Copies the first size bytes of the frame Peek gave, which spans CellsFor(size) cells, into out.
  void Gather(std::uint8_t* out, std::size_t size) const {
    for (std::uint64_t number = next_; size > 0; ++number) {
      std::size_t take = size < kFrameBytes ? size : kFrameBytes;
      std::memcpy(out, Cell(number).bytes, take);
      out += take;
      size -= take;
    }
  }
  // The frame Peek gave, over `cells` cells, is done with; Release hands them back to the writer.
  void Take(std::uint32_t cells = 1) {
    std::atomic_ref(next_).store(next_ + cells, std::memory_order_relaxed);
  }
  void Release() {
    if (control_->taken.load(std::memory_order_relaxed) != next_) {
      control_->taken.store(next_, std::memory_order_release);
    }
  }

 private:
  static std::uint32_t Stamp(std::uint64_t number) {
    return static_cast<std::uint32_t>(number + 1);
  }
  ShmCell& Cell(std::uint64_t number) const { return cells_[number % kCells]; }

  CellControl* control_ = nullptr;
  ShmCell* cells_ = nullptr;
  std::uint64_t written_ = 0;       // writer: frames written
  std::uint64_t seen_taken_ = 0;    // writer: the reader's count when last read
  mutable std::uint64_t next_ = 0;  // reader: frames taken (see Peek)
};

// A small raw message in cells, on the express lane (net/message.h SmallRaw): the mark, the
// payload's length, the tag and the number, then the payload; 28 bytes for an 8-byte message
// where its frame took 60. A frame in cells starts with the wire's magic instead. The two sides
// of a segment share one host, so integers are in its byte order. A payload of more than
// kFrameBytes - kHeaderSize bytes spans cells (CellRing::Put).
//
//   offset  size  field
//        0     4  mark "LMDR"
//        4     4  payload length
//        8     4  tag
//       12     8  number among the raw frames of the pair (RawBody::sequence)
//       20        payload
struct SmallRawCell {
  static constexpr std::uint32_t kMark = 0x52444d4c;  // "LMDR" read as little-endian
  static constexpr std::size_t kHeaderSize = 20;
  static constexpr std::size_t kMaxPayload = CellRing::kSpanBytes - kHeaderSize;

  std::uint32_t length = 0;
  std::int32_t tag = 0;
  std::uint64_t sequence = 0;
  const std::uint8_t* payload = nullptr;  // within the cell

  static bool IsOne(const std::uint8_t* cell) {
    std::uint32_t mark;
    std::memcpy(&mark, cell, 4);
    return mark == kMark;
  }
  // Into the next cells of `cells` (CellsFor(kHeaderSize + length) of them); length <= kMaxPayload.
  static void Write(CellRing& cells, std::int32_t tag, std::uint64_t sequence, const void* payload,
                    std::uint32_t length) {
    std::uint8_t* cell = cells.Next();
    std::memcpy(cell, &kMark, 4);
    std::memcpy(cell + 4, &length, 4);
    std::memcpy(cell + 8, &tag, 4);
    std::memcpy(cell + 12, &sequence, 8);
    if (kHeaderSize + length <= CellRing::kFrameBytes) {
      CopySmall(cell + kHeaderSize, payload, length);
    } else {
      cells.Put(kHeaderSize, payload, length);
    }
  }
  // The first cell of one (IsOne); its length is the writer's word, for the caller to check.
  static std::uint32_t LengthOf(const std::uint8_t* cell) {
    std::uint32_t length;
    std::memcpy(&length, cell + 4, 4);
    return length;
  }
  // The message's bytes, whole (gathered from its cells when it spans several).
  static SmallRawCell Read(const std::uint8_t* cell) {
    SmallRawCell raw;
    raw.length = LengthOf(cell);
    std::memcpy(&raw.tag, cell + 8, 4);
    std::memcpy(&raw.sequence, cell + 12, 8);
    raw.payload = cell + kHeaderSize;
    return raw;
  }
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_SHM_INTERNAL_SHM_CELLS_H_
