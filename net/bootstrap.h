#ifndef LMDX_NET_BOOTSTRAP_H_
#define LMDX_NET_BOOTSTRAP_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/job_secret.h"

namespace lmdx::net {

class RendezvousServer;

// What a node must know to join its job.
struct BootstrapInfo {
  int rank = 0;
  int size = 1;
  JobSecret secret{JobSecret::Bytes{}};
  std::string rendezvous;  // host:port of the rendezvous server
  std::string job_id;      // names the job's resources (segments, files)
  std::string bind_host;   // where this node's transports listen
  std::string launcher;    // who started the node, for messages: "lmdx run", "OpenMPI", ...
  // Rank 0 of a job whose launcher is not LMDX's hosts the rendezvous; it lives as long as the
  // node.
  std::shared_ptr<RendezvousServer> hosted_rendezvous;
};

// How a node learns its rank, the job size, the job secret and where to rendezvous. One
// implementation per way of starting a job; the first that recognises its environment wins.
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual const char* name() const = 0;
  // True when this process was started by this kind of launcher.
  virtual bool Detected() const = 0;
  // Reads the environment; throws lmdx::Error (LMDX_ERR_BOOTSTRAP) naming the variable that is
  // missing or wrong.
  virtual BootstrapInfo Read() const = 0;
};

// `lmdx run`: every LMDX_* variable of net/bootstrap_env.h.
std::unique_ptr<Bootstrap> MakeLauncherBootstrap();
// A cluster launcher (OpenMPI's mpirun, Slurm's srun, a PMI launcher) gives rank and size in its
// own variables, and LMDX_JOB_SECRET and LMDX_RENDEZVOUS were forwarded to every node by hand.
std::unique_ptr<Bootstrap> MakeClusterBootstrap();
// A launcher that offers PMIx (mpirun, srun --mpi=pmix): nothing to set by hand; rank 0 hosts the
// rendezvous and the launcher's key-value exchange carries the job to the others
// (net/pmix_bootstrap.cc).
std::unique_ptr<Bootstrap> MakePmixBootstrap();

// Whether some launcher started this process (else it runs alone, as a one-node job).
bool StartedByALauncher();

// Tries each bootstrap in turn. Throws lmdx::Error (LMDX_ERR_BOOTSTRAP) when none applies, with
// a message that says how to start an LMDX program.
BootstrapInfo DetectBootstrap();

}  // namespace lmdx::net

#endif  // LMDX_NET_BOOTSTRAP_H_
