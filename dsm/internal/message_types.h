// The DSM layer's own message types: the hundred after the protocols' in net's DSM range.
#ifndef LMDX_DSM_INTERNAL_MESSAGE_TYPES_H_
#define LMDX_DSM_INTERNAL_MESSAGE_TYPES_H_

#include "net/wire.h"

namespace lmdx::dsm::internal {

constexpr net::MessageType DsmType(int offset) noexcept {
  return static_cast<net::MessageType>(static_cast<int>(net::MessageType::kFirstDsm) + 100 +
                                       offset);
}
constexpr net::MessageType kDsmVariable = DsmType(0);
constexpr net::MessageType kDsmRegionOf = DsmType(1);
constexpr net::MessageType kDsmFree = DsmType(2);
constexpr net::MessageType kDsmStats = DsmType(3);
constexpr net::MessageType kDsmAccessKey = DsmType(4);  // dsm/home_access.h

}  // namespace lmdx::dsm::internal

#endif  // LMDX_DSM_INTERNAL_MESSAGE_TYPES_H_
