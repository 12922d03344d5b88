#include "base/small_copy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lmdx {
namespace {

// Every size on both sides of each piece's boundary, at every alignment of source and target:
// exactly the bytes asked for are copied, and not one byte around them is touched.
TEST(SmallCopyTest, CopiesExactlyTheBytesAskedForAtAnySizeAndAlignment) {
  constexpr std::size_t kGuard = 16;
  for (std::size_t size = 0; size <= 80; ++size) {
    for (std::size_t from_offset = 0; from_offset < 8; ++from_offset) {
      for (std::size_t to_offset = 0; to_offset < 8; ++to_offset) {
        std::vector<std::uint8_t> from(size + 2 * kGuard);
        for (std::size_t i = 0; i < from.size(); ++i)
          from[i] = static_cast<std::uint8_t>(i * 7 + 1);
        std::vector<std::uint8_t> to(size + 2 * kGuard, 0xAA);
        CopySmall(to.data() + kGuard + to_offset, from.data() + kGuard + from_offset, size);
        for (std::size_t i = 0; i < to.size(); ++i) {
          bool inside = i >= kGuard + to_offset && i < kGuard + to_offset + size;
          std::uint8_t want = inside ? from[i - to_offset + from_offset] : 0xAA;
          ASSERT_EQ(to[i], want) << "size " << size << " from +" << from_offset << " to +"
                                 << to_offset << " at " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lmdx
