#include "tools/local_job.h"

#include "base/error.h"
#include "net/bootstrap_env.h"
#include "net/job_secret.h"

namespace lmdx::tools {

LocalJob LocalJob::Create(int nodes, const std::string& rendezvous_host) {
  LocalJob job;
  auto secret = net::JobSecret::Generate();
  job.id_ = net::NewJobId();
  job.rendezvous_ = net::RendezvousServer::Start(secret, nodes, rendezvous_host);
  job.environment_ = {
      std::string(net::env::kJobSecret) + "=" + secret.Hex(),
      std::string(net::env::kRendezvous) + "=" + job.rendezvous_->address(),
      std::string(net::env::kJobId) + "=" + job.id_,
  };
  return job;
}

JobWatch::NodeState LocalJob::StateAfterExit(int rank) {
  // A node's sockets close as its process ends, so the rendezvous will read the end of its
  // connection, after any leave announced before it; the wait returns as soon as it has. Half a
  // second was not always enough when a thousand nodes ended at once on two cores, and a node
  // that had left in order was reported as ending without a word.
  switch (rendezvous_->StateAfterExit(rank, std::chrono::seconds(5))) {
    case net::RendezvousServer::NodeState::kNotJoined: return NodeState::kNotJoined;
    case net::RendezvousServer::NodeState::kJoined: return NodeState::kJoined;
    case net::RendezvousServer::NodeState::kLeft: return NodeState::kLeft;
  }
  return NodeState::kNotJoined;
}

void LocalJob::NodeGone(int rank) { rendezvous_->NodeGone(rank); }

bool LocalJob::HasJoined(int rank) { return rendezvous_->HasJoined(rank); }

}  // namespace lmdx::tools
