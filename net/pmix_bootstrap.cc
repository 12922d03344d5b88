// A job started by a cluster launcher that offers PMIx (OpenMPI's mpirun, Slurm's srun with
// --mpi=pmix, PRRTE): rank 0 creates the job (secret, job id, a rendezvous it hosts) and the
// launcher's key-value exchange carries it to every other process. docs/decisions.md says why.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "base/error.h"
#include "net/bootstrap.h"
#include "net/internal/pmix_client.h"
#include "net/rendezvous_server.h"

namespace lmdx::net {
namespace {

constexpr char kSecretKey[] = "lmdx.job_secret";
constexpr char kRendezvousKey[] = "lmdx.rendezvous";
constexpr char kJobIdKey[] = "lmdx.job_id";

// The first IPv4 address of an interface that is up and not loopback: what the nodes of other
// hosts can reach. Loopback when the host has none.
std::string ThisHostsAddress() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found = "127.0.0.1";
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (::inet_ntop(AF_INET, &address->sin_addr, text, sizeof text) != nullptr) {
      found = text;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

// Who started the process, for messages.
std::string LauncherName() {
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) return "OpenMPI (PMIx)";
  if (std::getenv("SLURM_PROCID") != nullptr) return "Slurm (PMIx)";
  return "a PMIx launcher";
}

class PmixBootstrap : public Bootstrap {
 public:
  const char* name() const override { return "PMIx"; }
  bool Detected() const override { return internal::PmixClient::Offered(); }
  BootstrapInfo Read() const override {
    internal::PmixClient pmix;
    BootstrapInfo info;
    info.rank = pmix.rank();
    info.size = pmix.size();
    info.launcher = LauncherName();
    const char* bind = std::getenv("LMDX_BIND_HOST");
    // A job on one host talks over loopback; one that spans hosts listens where they reach it.
    info.bind_host = bind != nullptr           ? bind
                     : pmix.all_on_this_host() ? "127.0.0.1"
                                               : ThisHostsAddress();
    if (info.rank == 0) {
      info.secret = JobSecret::Generate();
      info.hosted_rendezvous = RendezvousServer::Start(info.secret, info.size, info.bind_host);
      info.rendezvous = info.hosted_rendezvous->address();
      info.job_id = NewJobId();
      pmix.Publish(kSecretKey, info.secret.Hex());
      pmix.Publish(kRendezvousKey, info.rendezvous);
      pmix.Publish(kJobIdKey, info.job_id);
    }
    pmix.Exchange();
    if (info.rank != 0) {
      auto secret = JobSecret::FromHex(pmix.Lookup(0, kSecretKey));
      if (!secret) throw Error(LMDX_ERR_BOOTSTRAP, "rank 0 published a malformed job secret");
      info.secret = *secret;
      info.rendezvous = pmix.Lookup(0, kRendezvousKey);
      info.job_id = pmix.Lookup(0, kJobIdKey);
    }
    return info;
  }
};

}  // namespace

std::unique_ptr<Bootstrap> MakePmixBootstrap() { return std::make_unique<PmixBootstrap>(); }

}  // namespace lmdx::net
