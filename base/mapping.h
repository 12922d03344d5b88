#ifndef LMDX_BASE_MAPPING_H_
#define LMDX_BASE_MAPPING_H_

#include <sys/mman.h>

#include <cstddef>
#include <utility>

namespace lmdx {

// Owns one memory mapping and unmaps it once.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* address, std::size_t bytes) : address_(address), bytes_(bytes) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  Mapping(Mapping&& other) noexcept
      : address_(std::exchange(other.address_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept {
    if (this != &other) {
      reset();
      address_ = std::exchange(other.address_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~Mapping() { reset(); }

  std::byte* data() const { return static_cast<std::byte*>(address_); }
  std::size_t size() const { return bytes_; }
  void reset() {
    if (address_ != nullptr) ::munmap(address_, bytes_);
    address_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* address_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace lmdx

#endif  // LMDX_BASE_MAPPING_H_
