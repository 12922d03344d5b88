#ifndef LMDX_NET_BOOTSTRAP_H_
#define LMDX_NET_BOOTSTRAP_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/job_secret.h"

namespace lmdx::net {

// What a node must know to join its job.
struct BootstrapInfo {
  int rank = 0;
  int size = 1;
  JobSecret secret{JobSecret::Bytes{}};
  std::string rendezvous;  // host:port of the rendezvous server
  std::string job_id;      // names the job's resources (segments, files)
  std::string bind_host;   // where this node's transports listen
  std::string launcher;    // who started the node, for messages: "lmdx run", "OpenMPI", ...
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
// own variables; LMDX_JOB_SECRET and LMDX_RENDEZVOUS are forwarded to every node.
std::unique_ptr<Bootstrap> MakeClusterBootstrap();

// Tries each bootstrap in turn. Throws lmdx::Error (LMDX_ERR_BOOTSTRAP) when none applies, with
// a message that says how to start an LMDX program.
BootstrapInfo DetectBootstrap();

}  // namespace lmdx::net

#endif  // LMDX_NET_BOOTSTRAP_H_
