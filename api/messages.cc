// Raw messages: lmdx_send, lmdx_recv, lmdx_try_recv.
#include <memory>
#include <string>

#include "api/internal/runtime_state.h"
#include "dsm/service.h"

namespace lmdx::api {
namespace {

void CheckRank(const net::Node& node, int rank, bool any_allowed, const char* what) {
  if (any_allowed && rank == LMDX_ANY_SOURCE) return;
  if (rank < 0 || rank >= node.size()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(rank) +
                                               " is not a rank of this job (0 to " +
                                               std::to_string(node.size() - 1) + ")");
  }
}

int Receive(const char* call, int source, void* buffer, std::size_t capacity, lmdx_status* status,
            bool wait) {
  net::Node& node = RequireNode(call);
  CheckRank(node, source, /*any_allowed=*/true, "source");
  if (buffer == nullptr && capacity > 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "the buffer is NULL but its capacity is " + std::to_string(capacity));
  }
  // The transports write into the buffer without faulting pages in: a shared buffer receives
  // through a private one and a put.
  dsm::Service* dsm = dsm::Current();
  bool shared = dsm != nullptr && capacity > 0 && dsm->Contains(buffer);
  std::unique_ptr<std::byte[]> staging;
  if (shared) staging = std::make_unique_for_overwrite<std::byte[]>(capacity);
  net::Mailbox::Result result =
      node.mailbox().Receive(source, shared ? staging.get() : buffer, capacity, wait);
  if (shared && result.code == LMDX_OK) dsm->Put(buffer, staging.get(), result.length);
  if (result.code < 0) throw Error(static_cast<lmdx_error>(result.code), result.error);
  if (result.code == LMDX_OK && status != nullptr) {
    status->source = result.source;
    status->length = result.length;
  }
  return result.code;
}

}  // namespace
}  // namespace lmdx::api

extern "C" {

int lmdx_send(int dest, const void* buf, size_t len) {
  return lmdx::api::Guard("lmdx_send", [&] {
    using namespace lmdx::api;
    lmdx::net::Node& node = RequireNode("lmdx_send");
    CheckRank(node, dest, /*any_allowed=*/false, "destination");
    if (buf == nullptr && len > 0) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT,
                        "the buffer is NULL but its length is " + std::to_string(len));
    }
    // The transports read the buffer without faulting pages in: a shared buffer is copied out
    // through the protocol first.
    lmdx::dsm::Service* dsm = lmdx::dsm::Current();
    if (dsm != nullptr && len > 0 && dsm->Contains(buf)) {
      auto copy = std::make_shared_for_overwrite<std::byte[]>(len);
      dsm->Get(copy.get(), buf, len);
      node.Send(dest, lmdx::net::MessageType::kRaw, {},
                lmdx::net::Payload{copy.get(), len, std::shared_ptr<const void>(copy, copy.get())});
      return LMDX_OK;
    }
    node.Send(dest, lmdx::net::MessageType::kRaw, {}, lmdx::net::Payload{buf, len, nullptr});
    return LMDX_OK;
  });
}

int lmdx_recv(int src, void* buf, size_t cap, lmdx_status* status) {
  return lmdx::api::Guard("lmdx_recv", [&] {
    return lmdx::api::Receive("lmdx_recv", src, buf, cap, status, /*wait=*/true);
  });
}

int lmdx_try_recv(int src, void* buf, size_t cap, lmdx_status* status) {
  return lmdx::api::Guard("lmdx_try_recv", [&] {
    return lmdx::api::Receive("lmdx_try_recv", src, buf, cap, status, /*wait=*/false);
  });
}

}  // extern "C"
