#include "net/fabric/internal/ucx_worker.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "net/internal/socket.h"
#include "net/fabric/internal/ucx_library.h"

namespace lmdx::net::internal {
namespace {

// The reason is often the transports asked for, so the text names them when the user did.
[[noreturn]] void Throw(std::string_view step, ucs_status_t status) {
  std::string text = "UCX cannot start: " + UcxStatusText(step, status);
  const char* tls = std::getenv("UCX_TLS");
  if (tls != nullptr) text += std::string(" (UCX_TLS is \"") + tls + "\")";
  throw Error(LMDX_ERR_NETWORK, text);
}

}  // namespace

UcxWorker::UcxWorker(std::size_t expected_endpoints, bool peers_on_this_host) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = Ucx().config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) Throw("reading UCX's configuration", status);
  // UCX 1.13's active messages fetch a large payload between two processes of one host with
  // get_zcopy by default, and its pieces go slower the larger the message: 8 MiB took 16 to 21 ms
  // here (0.3 to 0.5 GB/s) and 64 MiB 230 ms. The sender putting it (put_zcopy) took 0.8 ms and
  // 9 ms (7 to 10 GB/s, OpenMPI's rate over UCX); over UCX's tcp it changed nothing measurable.
  // A scheme the user set in UCX_RNDV_SCHEME stands.
  if (std::getenv("UCX_RNDV_SCHEME") == nullptr && UcxMayUseSharedMemory()) {
    Ucx().config_modify(config, "RNDV_SCHEME", "put_zcopy");
  }
  // Active messages go by rendezvous from 64 KiB unless the user set UCX_RNDV_THRESH. UCX 1.13's
  // own threshold for them sent 32 KiB by rendezvous over its tcp, whose three trips took 68-87 us
  // against 25-27 eager (OpenMPI's tagged messages: 27-37), and over its shared memory 32 KiB took
  // 7-10 us against 3.5-5.6 eager. From 256 KiB on (the next size measured) rendezvous is as fast
  // or faster, its data landing straight in the posted receive (FabricTransport::
  // RendezvousTarget); the eager 1 MiB over shared memory that an earlier threshold of 1.5 MiB
  // chose took 94-194 us against 90-93.
  if (std::getenv("UCX_RNDV_THRESH") == nullptr) {
    Ucx().config_modify(config, "RNDV_THRESH", "64k");
  }
  // Between two processes of one kernel, UCX's tcp sockets keep what is in flight within the
  // caches, as LMDX's own do (KeepLocalTrafficInCache, net/internal/socket.h): 64 MiB went from
  // 4.4-4.6 to 5.6-5.8 GB/s and 8 MiB from 5.7-6.1 to 7.9-8.0. UCX sizes every socket of a
  // worker alike, so this holds only in a job whose peers all run here; a size the user set in
  // UCX_TCP_SNDBUF stands. (UCX 1.13 applies a transport's setting by its bare name: "SNDBUF",
  // not "TCP_SNDBUF".)
  if (peers_on_this_host && std::getenv("UCX_TCP_SNDBUF") == nullptr) {
    Ucx().config_modify(config, "SNDBUF", std::to_string(kLocalSendBufferBytes).c_str());
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  // Wakeup: the worker's event descriptor lets the progress thread sleep in epoll. RMA: one-sided
  // reads of memory a peer exposed.
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = expected_endpoints;
  params.name = "lmdx";
  status = Ucx().init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
  Ucx().config_release(config);
  if (status != UCS_OK) Throw("ucp_init", status);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = Ucx().worker_create(context_, &worker_params, &worker_);
  if (status != UCS_OK) {
    Ucx().cleanup(context_);
    Throw("ucp_worker_create", status);
  }

  ucp_worker_attr_t worker_attr{};
  worker_attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  if (Ucx().worker_query(worker_, &worker_attr) == UCS_OK) {
    max_am_header_ = worker_attr.max_am_header;
  }

  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  status = Ucx().worker_get_address(worker_, &address, &length);
  if (status == UCS_OK) {
    address_.assign(reinterpret_cast<const char*>(address), length);
    Ucx().worker_release_address(worker_, address);
    status = Ucx().worker_get_efd(worker_, &event_fd_);
  }
  if (status != UCS_OK) {
    Ucx().worker_destroy(worker_);
    Ucx().cleanup(context_);
    Throw(address_.empty() ? "ucp_worker_get_address" : "ucp_worker_get_efd", status);
  }
}

UcxWorker::~UcxWorker() {
  // The event descriptor belongs to the worker, which closes it.
  Ucx().worker_destroy(worker_);
  Ucx().cleanup(context_);
}

namespace {

// UCX_TLS as a list: whether it excludes (a leading '^') and the names, without the '^'.
struct TlsList {
  bool excluding = false;
  std::vector<std::string_view> names;
};

TlsList ReadUcxTls() {
  const char* value = std::getenv("UCX_TLS");
  std::string_view list = value != nullptr ? value : "";
  TlsList tls;
  tls.excluding = !list.empty() && list.front() == '^';
  if (tls.excluding) list.remove_prefix(1);
  while (!list.empty()) {
    std::string_view name = list.substr(0, list.find(','));
    list.remove_prefix(std::min(list.size(), name.size() + 1));
    tls.names.push_back(name);
  }
  return tls;
}

// sm, shm or mm: every shared-memory transport at once.
bool NamesAllSharedMemory(std::string_view name) {
  return name == "sm" || name == "shm" || name == "mm";
}

bool IsSharedMemoryTransport(std::string_view name) {
  return NamesAllSharedMemory(name) || name == "posix" || name == "sysv" || name == "xpmem" ||
         name == "cma" || name == "knem";
}

}  // namespace

bool UcxMayUseSharedMemory() {
  TlsList tls = ReadUcxTls();
  if (tls.names.empty()) return true;
  if (tls.excluding) return std::none_of(tls.names.begin(), tls.names.end(), NamesAllSharedMemory);
  return std::any_of(tls.names.begin(), tls.names.end(), [](std::string_view name) {
    return name == "all" || IsSharedMemoryTransport(name);
  });
}

std::string UcxStatusText(std::string_view step, ucs_status_t status) {
  return std::string(step) + ": " + Ucx().status_string(status);
}

}  // namespace lmdx::net::internal
