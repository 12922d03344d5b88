// Raw messages: lmdx_send, lmdx_recv, lmdx_try_recv and their tagged forms with network hints.
#include <memory>
#include <string>
#include <string_view>

#include "api/internal/message_checks.h"
#include "api/internal/runtime_state.h"
#include "dsm/service.h"

namespace lmdx::api {
namespace {

int Send(const char* call, int dest, int tag, const void* buffer, std::size_t length, int hint) {
  net::Node& node = RequireNode(call);
  CheckedSend send = CheckSend(node, dest, tag, buffer, length, hint);
  node.SendRaw(dest, tag, std::move(send.payload), send.network);
  return LMDX_OK;
}

int Receive(const char* call, int source, int tag, void* buffer, std::size_t capacity,
            lmdx_status* status, bool wait) {
  net::Node& node = RequireNode(call);
  bool shared = CheckReceive(node, source, tag, buffer, capacity);
  dsm::Service* dsm = dsm::Current();
  std::unique_ptr<std::byte[]> staging;
  if (shared) staging = std::make_unique_for_overwrite<std::byte[]>(capacity);
  net::Mailbox::Result result =
      node.mailbox().Receive(source, tag, shared ? staging.get() : buffer, capacity, wait);
  if (shared && result.code == LMDX_OK) dsm->Put(buffer, staging.get(), result.length);
  if (result.code < 0) throw Error(static_cast<lmdx_error>(result.code), result.error);
  if (result.code == LMDX_OK && status != nullptr) {
    status->source = result.source;
    status->length = result.length;
    status->tag = result.tag;
  }
  return result.code;
}

}  // namespace
}  // namespace lmdx::api

using lmdx::api::Guard;

extern "C" {

int lmdx_send(int dest, const void* buf, size_t len) {
  return Guard("lmdx_send",
               [&] { return lmdx::api::Send("lmdx_send", dest, 0, buf, len, LMDX_NET_ANY); });
}

int lmdx_send_tagged(int dest, int tag, const void* buf, size_t len, int net_hint) {
  return Guard("lmdx_send_tagged",
               [&] { return lmdx::api::Send("lmdx_send_tagged", dest, tag, buf, len, net_hint); });
}

int lmdx_recv(int src, void* buf, size_t cap, lmdx_status* status) {
  return Guard("lmdx_recv", [&] {
    return lmdx::api::Receive("lmdx_recv", src, LMDX_ANY_TAG, buf, cap, status, /*wait=*/true);
  });
}

int lmdx_try_recv(int src, void* buf, size_t cap, lmdx_status* status) {
  return Guard("lmdx_try_recv", [&] {
    return lmdx::api::Receive("lmdx_try_recv", src, LMDX_ANY_TAG, buf, cap, status,
                              /*wait=*/false);
  });
}

int lmdx_recv_tagged(int src, int tag, void* buf, size_t cap, lmdx_status* status) {
  return Guard("lmdx_recv_tagged", [&] {
    return lmdx::api::Receive("lmdx_recv_tagged", src, tag, buf, cap, status, /*wait=*/true);
  });
}

int lmdx_try_recv_tagged(int src, int tag, void* buf, size_t cap, lmdx_status* status) {
  return Guard("lmdx_try_recv_tagged", [&] {
    return lmdx::api::Receive("lmdx_try_recv_tagged", src, tag, buf, cap, status,
                              /*wait=*/false);
  });
}

}  // extern "C"
