#include "net/internal/ucx_worker.h"

#include <cstdlib>

#include "base/error.h"
#include "net/internal/ucx_library.h"

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

UcxWorker::UcxWorker(std::size_t expected_endpoints) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = Ucx().config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) Throw("reading UCX's configuration", status);

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

std::string UcxStatusText(std::string_view step, ucs_status_t status) {
  return std::string(step) + ": " + Ucx().status_string(status);
}

}  // namespace lmdx::net::internal
