// Non-blocking raw messages: lmdx_isend, lmdx_irecv, lmdx_test and lmdx_wait_request. A request
// starts the transfer and returns, so the program computes while the network moves the bytes
// (the overlap the seed's cluster study measured); the transfer's buffer is the network's until
// the request completes.
#include <lmdx/lmdx.h>

#include <memory>
#include <string>

#include "api/internal/message_checks.h"
#include "api/internal/runtime_state.h"
#include "dsm/service.h"
#include "net/completion.h"
#include "net/mailbox.h"

// The handle's type is the C API's; what it holds is the runtime's.
struct lmdx_request_object {
  // A send completes when the transport has its bytes (on_sent, on whichever thread wrote them).
  struct SendState {
    lmdx::net::Completion done;
    bool sent = false;
  };
  std::shared_ptr<SendState> send;
  int dest = -1;
  // A receive is a receive posted in the mailbox; into shared memory it goes through staging and
  // a put when it completes, on the thread that waits or tests.
  std::unique_ptr<lmdx::net::Mailbox::PendingReceive> receive;
  void* shared_buffer = nullptr;
  std::unique_ptr<std::byte[]> staging;
};

namespace lmdx::api {
namespace {

lmdx_request_t StartSend(const char* call, int dest, int tag, const void* buffer,
                         std::size_t length, int hint) {
  net::Node& node = RequireNode(call);
  CheckedSend send = CheckSend(node, dest, tag, buffer, length, hint);
  auto request = std::make_unique<lmdx_request_object>();
  request->send = std::make_shared<lmdx_request_object::SendState>();
  request->dest = dest;
  std::shared_ptr<lmdx_request_object::SendState> state = request->send;
  node.SendRawAsync(dest, tag, std::move(send.payload), send.network, [state](bool sent) {
    state->sent = sent;
    state->done.Signal();
  });
  return request.release();
}

lmdx_request_t StartReceive(const char* call, int source, int tag, void* buffer,
                            std::size_t capacity) {
  net::Node& node = RequireNode(call);
  bool shared = CheckReceive(node, source, tag, buffer, capacity);
  auto request = std::make_unique<lmdx_request_object>();
  void* into = buffer;
  if (shared) {
    request->shared_buffer = buffer;
    request->staging = std::make_unique_for_overwrite<std::byte[]>(capacity);
    into = request->staging.get();
  }
  request->receive = node.mailbox().Start(source, tag, into, capacity);
  return request.release();
}

bool Done(const lmdx_request_object& request) {
  return request.send ? request.send->done.done() : net::Mailbox::Done(*request.receive);
}

// Waits for the request, frees it, and fills status; throws what the transfer failed with.
int Finish(const char* call, lmdx_request_t* handle, lmdx_status* status) {
  std::unique_ptr<lmdx_request_object> request(*handle);
  *handle = nullptr;
  if (request->send) {
    net::WaitReason reason{"lmdx_wait_request (a send)", {}, request->dest};
    request->send->done.Wait(&reason);
    if (!request->send->sent) {
      throw Error(LMDX_ERR_PEER_LOST, "rank " + std::to_string(request->dest) +
                                          " was lost before the message reached it");
    }
    if (status != nullptr) *status = lmdx_status{request->dest, 0, -1};
    return LMDX_OK;
  }
  net::Mailbox::Result result = RequireNode(call).mailbox().Finish(*request->receive);
  if (result.code < 0) throw Error(static_cast<lmdx_error>(result.code), result.error);
  if (request->shared_buffer != nullptr) {
    dsm::Current()->Put(request->shared_buffer, request->staging.get(), result.length);
  }
  if (status != nullptr) *status = lmdx_status{result.source, result.length, result.tag};
  return LMDX_OK;
}

void CheckHandle(const lmdx_request_t* handle) {
  if (handle == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the request pointer is NULL");
}

}  // namespace
}  // namespace lmdx::api

using lmdx::api::Guard;

extern "C" {

int lmdx_isend(int dest, int tag, const void* buf, size_t len, int net_hint,
               lmdx_request_t* request) {
  return Guard("lmdx_isend", [&] {
    lmdx::api::CheckHandle(request);
    *request = nullptr;
    *request = lmdx::api::StartSend("lmdx_isend", dest, tag, buf, len, net_hint);
    return LMDX_OK;
  });
}

int lmdx_irecv(int src, int tag, void* buf, size_t cap, lmdx_request_t* request) {
  return Guard("lmdx_irecv", [&] {
    lmdx::api::CheckHandle(request);
    *request = nullptr;
    *request = lmdx::api::StartReceive("lmdx_irecv", src, tag, buf, cap);
    return LMDX_OK;
  });
}

int lmdx_test(lmdx_request_t* request, int* done, lmdx_status* status) {
  return Guard("lmdx_test", [&]() -> int {
    lmdx::api::CheckHandle(request);
    if (done == nullptr) throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "done is NULL");
    *done = 0;
    if (*request == nullptr) {
      *done = 1;
      if (status != nullptr) *status = lmdx_status{-1, 0, -1};
      return LMDX_OK;
    }
    if (!lmdx::api::Done(**request)) return LMDX_OK;
    *done = 1;
    return lmdx::api::Finish("lmdx_test", request, status);
  });
}

int lmdx_wait_request(lmdx_request_t* request, lmdx_status* status) {
  return Guard("lmdx_wait_request", [&]() -> int {
    lmdx::api::CheckHandle(request);
    if (*request == nullptr) {
      if (status != nullptr) *status = lmdx_status{-1, 0, -1};
      return LMDX_OK;
    }
    return lmdx::api::Finish("lmdx_wait_request", request, status);
  });
}

}  // extern "C"
