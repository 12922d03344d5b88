// Typed-message ports: lmdx_port_* (net/ports.h does the work; lmdx::Port<M> sits on these).
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "api/internal/runtime_state.h"
#include "dsm/service.h"

struct lmdx_port_send_object {
  lmdx::net::Completion done;
  std::atomic<bool> sent{false};
  int dest = -1;
  std::shared_ptr<std::byte[]> copy;  // the bytes, when the caller's lay in shared memory
};

namespace lmdx::api {
namespace {

using PortHandle = net::Ports::Port;

net::Ports& RequirePorts(const char* call) {
  RequireNode(call);
  net::Ports* ports = CurrentPorts();
  if (ports == nullptr) throw Error(LMDX_ERR_NOT_INITIALIZED, "the node has no ports");
  return *ports;
}

PortHandle* FromHandle(lmdx_port_t port) {
  if (port == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the port handle is NULL");
  return reinterpret_cast<PortHandle*>(port);
}

std::string NameOrThrow(const char* text, const char* what) {
  if (text == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  return text;
}

void CheckDestination(const net::Node& node, int dest) {
  if (dest < 0 || dest >= node.size()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "destination " + std::to_string(dest) +
                                               " is not a rank of this job (0 to " +
                                               std::to_string(node.size() - 1) + ")");
  }
}

// The payload of a port message: the caller's bytes, or a copy of them when they lie in shared
// memory (the transports read without faulting pages in).
net::Payload PayloadOf(const void* bytes, std::size_t length, std::shared_ptr<std::byte[]>* copy) {
  if (bytes == nullptr && length > 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "the bytes are NULL but their length is " + std::to_string(length));
  }
  dsm::Service* dsm = dsm::Current();
  if (dsm != nullptr && length > 0 && dsm->Contains(bytes)) {
    *copy = std::make_shared_for_overwrite<std::byte[]>(length);
    dsm->Get(copy->get(), bytes, length);
    return net::Payload{copy->get(), length, std::shared_ptr<const void>(*copy, copy->get())};
  }
  return net::Payload{bytes, length, nullptr};
}

void Fill(lmdx_port_message* out, std::unique_ptr<net::PortMessage> message) {
  out->source = message->source;
  out->data = message->data();
  out->length = message->size();
  out->type_name = message->type_name.c_str();
  out->internal = message.release();
}

}  // namespace
}  // namespace lmdx::api

using lmdx::api::Guard;

extern "C" {

lmdx_port_t lmdx_port_open(const char* name, const char* type_name) {
  lmdx::net::Ports::Port* port = nullptr;
  Guard("lmdx_port_open", [&] {
    using namespace lmdx::api;
    port = RequirePorts("lmdx_port_open")
               .Open(NameOrThrow(name, "the port name"), NameOrThrow(type_name, "the type name"));
    return LMDX_OK;
  });
  return reinterpret_cast<lmdx_port_t>(port);
}

int lmdx_port_close(lmdx_port_t port) {
  // A port object that outlives lmdx_finalize (one declared in main) closes quietly.
  lmdx::net::Ports* ports = lmdx::api::CurrentPorts();
  if (ports == nullptr || port == nullptr) return LMDX_OK;
  return Guard("lmdx_port_close", [&] {
    ports->Close(lmdx::api::FromHandle(port));
    return LMDX_OK;
  });
}

int lmdx_port_recv(lmdx_port_t port, int timeout_ms, lmdx_port_message* message) {
  return Guard("lmdx_port_recv", [&]() -> int {
    using namespace lmdx::api;
    lmdx::net::Ports& ports = RequirePorts("lmdx_port_recv");
    PortHandle* handle = FromHandle(port);
    if (message == nullptr) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the message to fill in is NULL");
    }
    *message = lmdx_port_message{-1, nullptr, 0, nullptr, nullptr};
    auto received =
        ports.Receive(handle, std::chrono::milliseconds(timeout_ms < 0 ? -1 : timeout_ms));
    if (!received) return 1;
    Fill(message, std::move(received));
    return LMDX_OK;
  });
}

void lmdx_port_release(lmdx_port_message* message) {
  if (message == nullptr) return;
  delete static_cast<lmdx::net::PortMessage*>(message->internal);
  *message = lmdx_port_message{-1, nullptr, 0, nullptr, nullptr};
}

int lmdx_port_reject(lmdx_port_t port, lmdx_port_message* message) {
  // Reported as the receive it belongs to.
  return Guard("lmdx_port_recv", [&]() -> int {
    using namespace lmdx::api;
    lmdx::net::Ports& ports = RequirePorts("lmdx_port_recv");
    PortHandle* handle = FromHandle(port);
    if (message == nullptr || message->internal == nullptr) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the message to reject is NULL or released");
    }
    std::string text =
        ports.UndecodableText(handle, *static_cast<lmdx::net::PortMessage*>(message->internal));
    lmdx_port_release(message);
    throw lmdx::Error(LMDX_ERR_BAD_MESSAGE, text);
  });
}

int lmdx_port_send(int node, const char* name, const char* type_name, const void* bytes,
                   size_t len) {
  return Guard("lmdx_port_send", [&] {
    using namespace lmdx::api;
    lmdx::net::Ports& ports = RequirePorts("lmdx_port_send");
    CheckDestination(*CurrentNode(), node);
    std::shared_ptr<std::byte[]> copy;
    lmdx::net::Payload payload = PayloadOf(bytes, len, &copy);
    ports.Send(node, NameOrThrow(name, "the port name"), NameOrThrow(type_name, "the type name"),
               std::move(payload));
    return LMDX_OK;
  });
}

int lmdx_port_send_async(int node, const char* name, const char* type_name, const void* bytes,
                         size_t len, lmdx_port_send_t* handle) {
  if (handle != nullptr) *handle = nullptr;
  return Guard("lmdx_port_send_async", [&] {
    using namespace lmdx::api;
    lmdx::net::Ports& ports = RequirePorts("lmdx_port_send_async");
    if (handle == nullptr) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the handle to fill in is NULL");
    }
    CheckDestination(*CurrentNode(), node);
    auto state = std::make_unique<lmdx_port_send_object>();
    state->dest = node;
    lmdx::net::Payload payload = PayloadOf(bytes, len, &state->copy);
    lmdx_port_send_object* raw = state.get();
    ports.SendAsync(node, NameOrThrow(name, "the port name"),
                    NameOrThrow(type_name, "the type name"), std::move(payload), [raw](bool sent) {
                      raw->sent.store(sent, std::memory_order_release);
                      raw->done.Signal();
                    });
    *handle = state.release();
    return LMDX_OK;
  });
}

int lmdx_port_send_done(lmdx_port_send_t handle) {
  return handle != nullptr && handle->done.done() ? 1 : 0;
}

int lmdx_port_send_wait(lmdx_port_send_t handle) {
  if (handle == nullptr) return LMDX_OK;
  // In a child of fork(), a send the parent started completes in the parent only.
  if (lmdx::InForkedChild()) return lmdx::api::FailInForkedChild("lmdx_port_send_wait");
  std::unique_ptr<lmdx_port_send_object> state(handle);
  state->done.Wait();
  return Guard("lmdx_port_send_wait", [&] {
    if (!state->sent.load(std::memory_order_acquire)) {
      throw lmdx::Error(LMDX_ERR_PEER_LOST, "rank " + std::to_string(state->dest) +
                                                " is gone; the message was not sent");
    }
    return LMDX_OK;
  });
}

}  // extern "C"
