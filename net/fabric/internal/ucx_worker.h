#ifndef LMDX_NET_FABRIC_INTERNAL_UCX_WORKER_H_
#define LMDX_NET_FABRIC_INTERNAL_UCX_WORKER_H_

#include <ucp/api/ucp.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace lmdx::net::internal {

// A node's UCX context and its one worker, owned together: the worker is made from the context
// and must go first. UCX reads its own variables (UCX_TLS, UCX_NET_DEVICES, ...) here; LMDX sets
// none of them, so a user or a cluster's module file chooses the transports.
//
// The worker is made in the serialized thread mode: any thread may call it, one at a time. The
// fabric transport holds one mutex around every call (net/fabric/fabric_transport.h says why).
class UcxWorker {
 public:
  // Throws lmdx::Error(LMDX_ERR_NETWORK) naming the step and UCX's reason when UCX cannot start
  // here (no usable transport, a bad UCX_TLS, ...). peers_on_this_host: every peer the worker
  // will meet runs on this host (the job talks over loopback).
  UcxWorker(std::size_t expected_endpoints, bool peers_on_this_host);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h get() const { return worker_; }
  ucp_context_h context() const { return context_; }
  // Readable when the worker has events, once armed (ucp_worker_arm).
  int event_fd() const { return event_fd_; }
  // What another worker needs to reach this one (ucp_ep_create), as bytes.
  const std::string& address() const { return address_; }
  // The largest header an active message may carry.
  std::size_t max_am_header() const { return max_am_header_; }

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::string address_;
  std::size_t max_am_header_ = 0;
};

// Whether UCX_TLS lets UCX reach a peer on this host through shared memory (unset, "all", an
// exclusion list that spares them, or a list naming sm, posix, sysv, cma, xpmem or knem).
bool UcxMayUseSharedMemory();

// "step: UCX's text for status", for errors and log lines.
std::string UcxStatusText(std::string_view step, ucs_status_t status);

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_FABRIC_INTERNAL_UCX_WORKER_H_
