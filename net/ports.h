// Typed-message ports: named mailboxes on each node. A message goes to (node, port name) and
// carries its type's name beside its bytes; the port, opened for one type, hands out messages
// from any node, each node's in the order it sent them. lmdx::Port<M> (include/lmdx/lmdx.hpp)
// sits on this through the C calls lmdx_port_*; see docs/messages.md.
#ifndef LMDX_NET_PORTS_H_
#define LMDX_NET_PORTS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "net/completion.h"
#include "net/message.h"
#include "net/node.h"

namespace lmdx::net {

// One message, body PortHeader (net/ports.proto), payload the message's bytes.
inline constexpr MessageType kPortMessage = MessageType::kFirstPorts;

// A message taken from a port.
struct PortMessage {
  int source = -1;
  std::string type_name;  // the type its sender named
  InboundMessage frame;   // its payload is the message's bytes
  const std::uint8_t* data() const { return frame.payload; }
  std::size_t size() const { return static_cast<std::size_t>(frame.header.payload_length); }
};

// This node's ports. Thread-safe; receives block in net::Completion. Failures throw lmdx::Error.
class Ports {
 public:
  struct Port;  // a handle: valid as long as this object

  explicit Ports(Node& node);
  Ports(const Ports&) = delete;
  Ports& operator=(const Ports&) = delete;

  // Installs the message handler; called before the node joins the job.
  void RegisterHandlers();

  // Opens port name for messages of type_name; messages that came for it before are there.
  // A port open already is LMDX_ERR_MISUSE.
  Port* Open(const std::string& name, const std::string& type_name);
  // Closes it: later messages wait for it to open again; a thread waiting in Receive fails.
  void Close(Port* port);

  // The next message of port, from any node: waits at most timeout (negative: without limit;
  // zero: takes only a message already there); nullptr when none came. A message of another type
  // than the port's is dropped and throws LMDX_ERR_BAD_MESSAGE naming the port and the sender.
  std::unique_ptr<PortMessage> Receive(Port* port, std::chrono::milliseconds timeout);

  // The error text for a message of port that its receiver could not decode.
  std::string UndecodableText(const Port* port, const PortMessage& message) const;
  const std::string& NameOf(const Port* port) const;

  // Sends payload as a message of type_name to port name on dest; returns once the kernel (or
  // the ring) has a borrowed payload.
  void Send(int dest, const std::string& name, const std::string& type_name, Payload payload);
  // Starts the same send and returns at once; payload must stay valid until on_sent runs.
  void SendAsync(int dest, const std::string& name, const std::string& type_name, Payload payload,
                 std::function<void(bool sent)> on_sent);

 private:
  struct Waiter {
    Completion done;
    std::unique_ptr<PortMessage> message;
    bool closed = false;
  };
  void Deliver(const std::string& name, std::unique_ptr<PortMessage> message);
  std::string Describe(const Port* port) const;
  static std::string Body(const std::string& name, const std::string& type_name);

  Node& node_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Port>> ports_;  // by name, opened or not
};

struct Ports::Port {
  std::string name;
  std::string type_name;  // of the last Open
  bool open = false;
  std::deque<std::unique_ptr<PortMessage>> queue;  // arrived, not yet received
  std::list<Waiter*> waiters;                      // threads in Receive, in order
};

}  // namespace lmdx::net

#endif  // LMDX_NET_PORTS_H_
