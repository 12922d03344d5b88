// Splits a fuzzer's input into the pieces a target needs, so that one byte string drives
// several arguments.
#ifndef LMDX_TESTS_FUZZ_FUZZ_INPUT_H_
#define LMDX_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace lmdx::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::size_t left() const { return size_ - at_; }

  std::uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }

  std::uint32_t U32() {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value = (value << 8) | Byte();
    return value;
  }

  // A piece whose length is the next byte pair's value (bounded by what is left).
  std::string Piece() {
    std::size_t length = (std::size_t{Byte()} << 8) | Byte();
    return Bytes(length);
  }

  std::string Rest() { return Bytes(left()); }

 private:
  std::string Bytes(std::size_t length) {
    length = length < left() ? length : left();
    std::string out(reinterpret_cast<const char*>(data_ + at_), length);
    at_ += length;
    return out;
  }

  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace lmdx::fuzz

#endif  // LMDX_TESTS_FUZZ_FUZZ_INPUT_H_
