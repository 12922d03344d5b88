#include "net/ports.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "net/ports.pb.h"

namespace lmdx::net {
namespace {

std::string Rank(int rank) { return "rank " + std::to_string(rank); }

void CheckNames(const std::string& name, const std::string& type_name) {
  if (name.empty()) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the port name is empty");
  if (type_name.empty()) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "the type name of port \"" + name + "\" is empty");
  }
}

}  // namespace

Ports::Ports(Node& node) : node_(node) {}

void Ports::RegisterHandlers() {
  SetMessageTypeName(kPortMessage, "port-message");
  node_.Handle(kPortMessage, [this](InboundMessage& frame, const ReplyTo*) {
    wire::PortHeader header;
    if (!header.ParseFromString(frame.body) || header.port().empty()) {
      LogLine("a port message from " + Rank(frame.header.source) + " has no valid header; dropped");
      return;
    }
    auto message = std::make_unique<PortMessage>();
    message->source = frame.header.source;
    message->type_name = header.type_name();
    message->frame = std::move(frame);
    Deliver(header.port(), std::move(message));
  });
}

std::string Ports::Describe(const Port* port) const {
  return "port \"" + port->name + "\" on " + Rank(node_.rank());
}

const std::string& Ports::NameOf(const Port* port) const { return port->name; }

Ports::Port* Ports::Open(const std::string& name, const std::string& type_name) {
  CheckNames(name, type_name);
  std::lock_guard lock(mutex_);
  std::unique_ptr<Port>& slot = ports_[name];
  if (!slot) {
    slot = std::make_unique<Port>();
    slot->name = name;
  }
  if (slot->open) {
    throw Error(LMDX_ERR_MISUSE,
                Describe(slot.get()) + " is open already (for " + slot->type_name + ")");
  }
  slot->type_name = type_name;
  slot->open = true;
  return slot.get();
}

void Ports::Close(Port* port) {
  std::lock_guard lock(mutex_);
  port->open = false;
  for (Waiter* waiter : port->waiters) {
    waiter->closed = true;
    waiter->done.Signal();
  }
  port->waiters.clear();
}

// Progress thread. Signals under mutex_: a waiter that timed out takes mutex_ before it looks at
// what it got, so it never leaves while a signal is under way.
void Ports::Deliver(const std::string& name, std::unique_ptr<PortMessage> message) {
  std::lock_guard lock(mutex_);
  std::unique_ptr<Port>& slot = ports_[name];
  if (!slot) {
    slot = std::make_unique<Port>();
    slot->name = name;
  }
  Port& port = *slot;
  if (port.open && !port.waiters.empty()) {
    Waiter* waiter = port.waiters.front();
    port.waiters.pop_front();
    waiter->message = std::move(message);
    waiter->done.Signal();
    return;
  }
  port.queue.push_back(std::move(message));
}

std::unique_ptr<PortMessage> Ports::Receive(Port* port, std::chrono::milliseconds timeout) {
  std::unique_ptr<PortMessage> message;
  std::string type_name;
  Waiter waiter;
  {
    std::lock_guard lock(mutex_);
    if (!port->open) throw Error(LMDX_ERR_MISUSE, Describe(port) + " is not open");
    type_name = port->type_name;
    if (!port->queue.empty()) {
      message = std::move(port->queue.front());
      port->queue.pop_front();
    } else if (timeout.count() == 0) {
      return nullptr;
    } else {
      port->waiters.push_back(&waiter);
    }
  }
  if (!message) {
    bool interrupted = false;
    if (timeout.count() < 0) {
      WaitReason reason{"a receive on port", port->name};
      interrupted = !waiter.done.WaitUnlessInterrupted(&reason);
    } else {
      interrupted =
          waiter.done.WaitForUnlessInterrupted(timeout) == Completion::Outcome::kInterrupted;
    }
    std::lock_guard lock(mutex_);
    if (waiter.message == nullptr && !waiter.closed) {
      // Nothing came in time, or the waiting thread was killed.
      port->waiters.remove(&waiter);
      if (interrupted) {
        throw Error(LMDX_ERR_SHUTDOWN,
                    "the thread was killed while it waited on " + Describe(port));
      }
      return nullptr;
    }
    if (waiter.closed) {
      throw Error(LMDX_ERR_MISUSE, Describe(port) + " was closed while a thread waited on it");
    }
    message = std::move(waiter.message);
  }
  if (message->type_name != type_name) {
    throw Error(LMDX_ERR_BAD_MESSAGE, Describe(port) + ": the message from " +
                                          Rank(message->source) + " is a " + message->type_name +
                                          ", not a " + type_name + "; dropped");
  }
  return message;
}

std::string Ports::UndecodableText(const Port* port, const PortMessage& message) const {
  std::lock_guard lock(mutex_);
  return Describe(port) + ": the message from " + Rank(message.source) + " (" +
         std::to_string(message.size()) + " bytes) does not parse as " + port->type_name +
         "; dropped";
}

std::string Ports::Body(const std::string& name, const std::string& type_name) {
  CheckNames(name, type_name);
  wire::PortHeader header;
  header.set_port(name);
  header.set_type_name(type_name);
  return header.SerializeAsString();
}

void Ports::Send(int dest, const std::string& name, const std::string& type_name, Payload payload) {
  node_.Send(dest, kPortMessage, Body(name, type_name), std::move(payload));
}

void Ports::SendAsync(int dest, const std::string& name, const std::string& type_name,
                      Payload payload, std::function<void(bool)> on_sent) {
  node_.SendAsync(dest, kPortMessage, Body(name, type_name), std::move(payload),
                  std::move(on_sent));
}

}  // namespace lmdx::net
