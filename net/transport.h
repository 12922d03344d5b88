#ifndef LMDX_NET_TRANSPORT_H_
#define LMDX_NET_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "base/mapping.h"
#include "net/message.h"
#include "net/wire.pb.h"

namespace lmdx::net {

// What a transport needs from the node it serves. Called on the progress thread.
class TransportHost {
 public:
  virtual ~TransportHost() = default;
  // Where the payload of this frame should land: memory the receiver named (a posted receive
  // buffer of at least header.payload_length bytes), or nullptr for a buffer of the message's own.
  virtual std::uint8_t* PlacePayload(const FrameHeader& header, const std::string& body) = 0;
  // True when a frame that PlacePayload found no memory for may find some soon: a raw message
  // whose receive is not posted yet. A transport that can leave a payload at its sender for a
  // while (fabric's rendezvous) then asks again before fetching it into a buffer of its own,
  // which would cost the receive a second copy.
  virtual bool MayPlaceLater(const FrameHeader& /*header*/) { return false; }
  // A transport that holds data at its sender and looks again only when polled asks for this:
  // the host then wakes the progress engine once the next receive is posted (a receiver that
  // parks never polls).
  virtual void WakeOnNextReceive() {}
  // A whole frame arrived from an authenticated peer; the host may move from it (taken by
  // reference: each move of a message on a small frame's way to its receive was a few per cent of
  // a shared-memory half round trip). A raw frame's payload may be borrowed
  // (InboundMessage::payload_borrowed): a host that keeps the message past this call copies the
  // payload first (KeepPayload).
  virtual void OnMessage(InboundMessage&& message) = 0;
  // A small raw message came whole from an authenticated peer (Transport::SendRawNow at its
  // sender); its payload is borrowed for the call. A host without a way of its own takes it as
  // the raw frame it stands for.
  virtual void OnRawMessage(const SmallRaw& raw) { OnMessage(AsRawFrame(raw)); }
  // The same, but called where the transport may not hand messages over (inside its own lock, in
  // a network library's callback): it takes the message only when it completes a receive that
  // the calling thread itself waits for and polls for, so it takes no lock but the mailbox's and
  // wakes nobody. False leaves the message to the transport's usual way. Spares a small message
  // the queue it would wait in until the transport's lock is let go.
  virtual bool TakeRawForThisThread(const SmallRaw& /*raw*/) { return false; }
  // An authenticated peer's connection ended or failed.
  virtual void OnPeerLost(int rank, const std::string& why) = 0;
};

// One kind of network (shm, fabric, tcp, udp). A transport authenticates every connection (or,
// without connections, every message), frames messages (net/wire.h), keeps per-pair FIFO order,
// and delivers whole frames to its host. Node picks the transport of each pair; see
// docs/architecture.md.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // How other nodes reach this one; advertised through the rendezvous.
  virtual wire::Endpoint LocalEndpoint() const = 0;
  // Where every node listens. Called once, before the first Send.
  virtual void SetJobTable(const wire::JobTable& table) = 0;
  // Queues a frame to dest (never this node). Any thread may call it; frames to one destination
  // leave in the order of the calls. may_block: the caller may wait for socket space (an
  // application thread); the progress thread passes false.
  virtual void Send(int dest, OutgoingMessage message, bool may_block) = 0;
  // Sends the frame within this call when the network can take all of it at once (a
  // shared-memory ring with room, nothing queued before it): true then, and the payload's memory
  // is free again. False sends nothing (the caller goes through Send); on_sent is never called.
  // Application threads only. Spares a sender of borrowed memory its wait for on_sent, which
  // cost a shared-memory message a fifth of its latency.
  virtual bool SendNow(int /*dest*/, OutgoingMessage& /*message*/) { return false; }
  // The express lane for a small raw message (SmallRaw, to raw.destination, never this node):
  // written whole within this call, without a frame header, when the network can take it at once
  // and in order with the frames before it. False sends nothing: the caller sends the raw frame
  // the usual way, with the same number. Application threads only; the payload is free again on
  // return.
  virtual bool SendRawNow(const SmallRaw& /*raw*/) { return false; }
  // Closes every connection without reporting peers as lost (the job is ending).
  virtual void Close() = 0;
  // The node lost rank (another network of the pair ended, or this one did): stop reading from
  // it, and let go of any memory its frames were being read into. The node fails the receives
  // that waited on rank once every transport returned from this, and their callers may free
  // their buffers at once, so no byte of rank's may land in them later. Called where the host's
  // callbacks are (dispatching, so no poll of this transport runs meanwhile); may be called for
  // a peer this transport has lost already. It never reports the loss from within the call (the
  // node would fail the waiters before the other transports dropped the peer); it may later.
  virtual void DropPeer(int /*rank*/, const std::string& /*why*/) {}

  // One-sided access, on networks with remote memory access (shm between the processes of a
  // host, fabric): a node exposes memory once and hands the key to its peers in its own
  // authenticated frames; a peer holding the key then reads (and, where the network allows,
  // writes) that memory with no code of the exposing node running. Whoever holds the key can
  // reach the memory, so it must travel only in the job's frames.
  //
  // Registers [base, base + size) for access by peers until Close and returns the key; nullopt
  // when this network has no remote access. Throws lmdx::Error when the network refuses the range.
  virtual std::optional<std::string> Expose(void* /*base*/, std::size_t /*size*/) {
    return std::nullopt;
  }
  // Reads size bytes at remote_address, in memory dest exposed with key, into local. on_done runs
  // once, on the dispatching thread or in this call: true when every byte is in local. False
  // (and on_done never runs) when this network has no remote reads.
  virtual bool Read(int /*dest*/, std::uint64_t /*remote_address*/, const std::string& /*key*/,
                    void* /*local*/, std::size_t /*size*/,
                    std::function<void(bool ok)> /*on_done*/) {
    return false;
  }
  // Writes each piece (size bytes from `from` to `address` in memory dest exposed with key), and
  // returns once every byte is there or the write failed: true when it was all written. nullopt
  // when this network has no remote writes. Pieces of one call may land in any order.
  struct WritePiece {
    std::uint64_t address;
    const void* from;
    std::size_t size;
  };
  virtual std::optional<bool> Write(int /*dest*/, const std::string& /*key*/,
                                    std::span<const WritePiece> /*pieces*/) {
    return std::nullopt;
  }
  // Maps the first size bytes of the file behind memory dest exposed with key (`file` is its
  // descriptor in dest's process, which dest sent in its own frames) into this process, for
  // reading and writing with plain loads and stores: no system call per access at all. An empty
  // Mapping when this network cannot (only processes of one host can share a file this way).
  virtual Mapping Map(int /*dest*/, const std::string& /*key*/, int /*file*/,
                      std::size_t /*size*/) {
    return {};
  }
};

}  // namespace lmdx::net

#endif  // LMDX_NET_TRANSPORT_H_
