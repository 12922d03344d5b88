// The buffer a fetch receives its pages into before they are installed. A fresh buffer of the
// 512 KiB a walk's fetch brings costs 128 first-touch page faults (about 10 µs each on these
// machines) and its release an munmap, more than moving the pages; so each thread keeps the
// buffers its fetches used, and the next fetch takes one back, its bytes left as they were (every
// byte is overwritten by the pages before it is read).
#ifndef LMDX_CONSISTENCY_HOME_BASED_INTERNAL_STAGING_BUFFER_H_
#define LMDX_CONSISTENCY_HOME_BASED_INTERNAL_STAGING_BUFFER_H_

#include <cstddef>
#include <memory>

namespace lmdx::consistency::internal {

class StagingBuffer {
 public:
  StagingBuffer() = default;
  // One of this thread's spare buffers of at least `bytes`, or a new one.
  explicit StagingBuffer(std::size_t bytes);
  StagingBuffer(StagingBuffer&& other) noexcept;
  StagingBuffer& operator=(StagingBuffer&& other) noexcept;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  // Back among this thread's spares (the largest few are kept).
  ~StagingBuffer();

  std::byte* data() { return bytes_.get(); }
  std::size_t size() const { return size_; }

 private:
  void GiveBack();

  std::unique_ptr<std::byte[]> bytes_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_STAGING_BUFFER_H_
