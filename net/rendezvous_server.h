#ifndef LMDX_NET_RENDEZVOUS_SERVER_H_
#define LMDX_NET_RENDEZVOUS_SERVER_H_

#include <chrono>
#include <memory>
#include <string>

#include "net/job_secret.h"

namespace lmdx::net {

// Where the nodes of a job meet. Each node connects, proves it knows the job secret, and says
// its rank and the addresses it listens on; once all have joined, each gets the whole table. The
// local launcher hosts it; a cluster job can host it on rank 0.
//
// The connection of each node stays open for the life of the job: a node whose rendezvous
// connection closes knows its launcher is gone and ends itself.
class RendezvousServer {
 public:
  // Listens on bind_host, an ephemeral port, and serves from a thread of its own until destroyed.
  // Throws lmdx::Error when it cannot listen.
  static std::unique_ptr<RendezvousServer> Start(const JobSecret& secret, int job_size,
                                                 const std::string& bind_host = "127.0.0.1");
  virtual ~RendezvousServer() = default;

  // "host:port", the value of LMDX_RENDEZVOUS for the nodes.
  virtual std::string address() const = 0;

  // What the rendezvous knows of a node: lets a launcher tell an orderly exit from a death.
  enum class NodeState {
    kNotJoined,  // never joined: not an LMDX program, or it ended before lmdx_init
    kJoined,     // joined and did not announce its end: it died, or exited in mid-job
    kLeft,       // announced an orderly end (net/wire.proto: Leave)
  };
  // Call once the process of rank is gone. Waits up to `settle` (multiplied on crowded hosts,
  // net/crowding.h) for its connection to close, so that a leave announced just before the exit
  // is counted.
  virtual NodeState StateAfterExit(int rank, std::chrono::milliseconds settle) = 0;
  // The process of rank is gone. If it never joined, nodes waiting for the job table are told
  // the job cannot start, instead of waiting for ever.
  virtual void NodeGone(int rank) = 0;
  // Whether rank has joined (its lmdx_init reached the rendezvous), now.
  virtual bool HasJoined(int rank) = 0;
};

}  // namespace lmdx::net

#endif  // LMDX_NET_RENDEZVOUS_SERVER_H_
