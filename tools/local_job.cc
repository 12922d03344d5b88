#include "tools/local_job.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "base/error.h"
#include "net/bootstrap_env.h"
#include "net/job_secret.h"

namespace lmdx::tools {

std::string NewJobId() {
  // Not derived from the secret: the id appears in names anyone on the machine can read.
  std::uint64_t value = 0;
  if (::getrandom(&value, sizeof(value), 0) != sizeof(value)) {
    ThrowSystemError("getrandom", errno, LMDX_ERR_INTERNAL);
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

LocalJob LocalJob::Create(int nodes, const std::string& rendezvous_host) {
  LocalJob job;
  auto secret = net::JobSecret::Generate();
  job.id_ = NewJobId();
  job.rendezvous_ = net::RendezvousServer::Start(secret, nodes, rendezvous_host);
  job.environment_ = {
      std::string(net::env::kJobSecret) + "=" + secret.Hex(),
      std::string(net::env::kRendezvous) + "=" + job.rendezvous_->address(),
      std::string(net::env::kJobId) + "=" + job.id_,
  };
  return job;
}

JobWatch::NodeState LocalJob::StateAfterExit(int rank) {
  // A node's sockets close as its process ends; half a second is plenty for the rendezvous to
  // read a leave announced just before.
  switch (rendezvous_->StateAfterExit(rank, std::chrono::milliseconds(500))) {
    case net::RendezvousServer::NodeState::kNotJoined: return NodeState::kNotJoined;
    case net::RendezvousServer::NodeState::kJoined: return NodeState::kJoined;
    case net::RendezvousServer::NodeState::kLeft: return NodeState::kLeft;
  }
  return NodeState::kNotJoined;
}

void LocalJob::NodeGone(int rank) { rendezvous_->NodeGone(rank); }

bool LocalJob::HasJoined(int rank) { return rendezvous_->HasJoined(rank); }

}  // namespace lmdx::tools
