#ifndef LMDX_TOOLS_LOCAL_JOB_H_
#define LMDX_TOOLS_LOCAL_JOB_H_

#include <memory>
#include <string>
#include <vector>

#include "net/rendezvous_server.h"
#include "tools/job_watch.h"

namespace lmdx::tools {

// What a job on this machine needs beside its processes: a fresh secret, a job id and the
// rendezvous server where the nodes meet. The server lives as long as this object.
class LocalJob : public JobWatch {
 public:
  // The rendezvous listens on rendezvous_host (an address of this machine), on an ephemeral
  // port. Throws lmdx::Error when it cannot listen there.
  static LocalJob Create(int nodes, const std::string& rendezvous_host = "127.0.0.1");

  const std::string& id() const { return id_; }
  // LMDX_JOB_SECRET, LMDX_RENDEZVOUS and LMDX_JOB_ID as "NAME=value", for every node.
  const std::vector<std::string>& environment() const { return environment_; }

  // JobWatch, answered by the rendezvous server.
  NodeState StateAfterExit(int rank) override;
  void NodeGone(int rank) override;
  bool HasJoined(int rank) override;

 private:
  std::string id_;
  std::unique_ptr<net::RendezvousServer> rendezvous_;
  std::vector<std::string> environment_;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_LOCAL_JOB_H_
