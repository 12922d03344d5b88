#include "net/bootstrap.h"

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "net/bootstrap_env.h"

namespace lmdx::net {
namespace {

const char* Get(const char* name) { return std::getenv(name); }

[[noreturn]] void Fail(const std::string& what) { throw Error(LMDX_ERR_BOOTSTRAP, what); }

int ReadInt(const char* name, int min, int max) {
  const char* text = Get(name);
  if (text == nullptr || *text == '\0') Fail(std::string(name) + " is not set");
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < min || value > max) {
    Fail(std::string(name) + "=" + text + " is not a number from " + std::to_string(min) + " to " +
         std::to_string(max));
  }
  return static_cast<int>(value);
}

// The job secret, rendezvous and job id come the same way from every launcher.
void ReadJobVariables(BootstrapInfo& info) {
  const char* secret = Get(env::kJobSecret);
  if (secret == nullptr) Fail(std::string(env::kJobSecret) + " is not set");
  auto parsed = JobSecret::FromHex(secret);
  if (!parsed) Fail(std::string(env::kJobSecret) + " is not 64 hex digits");
  info.secret = *parsed;
  const char* rendezvous = Get(env::kRendezvous);
  if (rendezvous == nullptr || *rendezvous == '\0') {
    Fail(std::string(env::kRendezvous) + " is not set");
  }
  info.rendezvous = rendezvous;
  const char* job_id = Get(env::kJobId);
  info.job_id = job_id != nullptr ? job_id : "0";
  const char* bind = Get("LMDX_BIND_HOST");
  info.bind_host = bind != nullptr ? bind : "127.0.0.1";
}

class LauncherBootstrap : public Bootstrap {
 public:
  const char* name() const override { return "lmdx run"; }
  bool Detected() const override { return Get(env::kRank) != nullptr; }
  BootstrapInfo Read() const override {
    BootstrapInfo info;
    info.size = ReadInt(env::kSize, 1, 1 << 20);
    info.rank = ReadInt(env::kRank, 0, info.size - 1);
    ReadJobVariables(info);
    info.launcher = name();
    return info;
  }
};

// Variables of rank and size, by launcher.
struct ClusterVariables {
  const char* launcher;
  const char* rank;
  const char* size;
};
constexpr ClusterVariables kClusterVariables[] = {
    {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"PMI", "PMI_RANK", "PMI_SIZE"},
};

class ClusterBootstrap : public Bootstrap {
 public:
  const char* name() const override { return "cluster launcher"; }
  bool Detected() const override { return Find() != nullptr && Get(env::kRendezvous) != nullptr; }
  BootstrapInfo Read() const override {
    const ClusterVariables* variables = Find();
    if (variables == nullptr) Fail("no cluster launcher variables are set");
    BootstrapInfo info;
    info.size = ReadInt(variables->size, 1, 1 << 20);
    info.rank = ReadInt(variables->rank, 0, info.size - 1);
    ReadJobVariables(info);
    info.launcher = variables->launcher;
    return info;
  }

  static const ClusterVariables* Find() {
    for (const ClusterVariables& variables : kClusterVariables) {
      if (Get(variables.rank) != nullptr && Get(variables.size) != nullptr) return &variables;
    }
    return nullptr;
  }
};

}  // namespace

std::unique_ptr<Bootstrap> MakeLauncherBootstrap() { return std::make_unique<LauncherBootstrap>(); }
std::unique_ptr<Bootstrap> MakeClusterBootstrap() { return std::make_unique<ClusterBootstrap>(); }

bool StartedByALauncher() {
  for (auto make : {MakeLauncherBootstrap, MakeClusterBootstrap, MakePmixBootstrap}) {
    if (make()->Detected()) return true;
  }
  return ClusterBootstrap::Find() != nullptr;
}

BootstrapInfo DetectBootstrap() {
  for (auto make : {MakeLauncherBootstrap, MakeClusterBootstrap, MakePmixBootstrap}) {
    std::unique_ptr<Bootstrap> bootstrap = make();
    if (bootstrap->Detected()) return bootstrap->Read();
  }
  if (const ClusterVariables* variables = ClusterBootstrap::Find()) {
    Fail(std::string("started by ") + variables->launcher + " (" + variables->rank + "=" +
         Get(variables->rank) +
         "), which offers this process no PMIx server to exchange the job's addresses through: "
         "start it with a launcher that does (mpirun, `srun --mpi=pmix`), or set " +
         env::kJobSecret + " and " + env::kRendezvous + " for every process");
  }
  Fail(
      "this program was not started by an LMDX launcher (LMDX_RANK is not set); run it with "
      "`lmdx run -n N PROGRAM`");
}

}  // namespace lmdx::net
