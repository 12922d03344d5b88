#ifndef LMDX_NET_FABRIC_INTERNAL_UCX_LIBRARY_H_
#define LMDX_NET_FABRIC_INTERNAL_UCX_LIBRARY_H_

#include <ucp/api/ucp.h>

namespace lmdx::net::internal {

// UCX's functions, from libucp opened at run time the first time a node of this process starts
// fabric. Linked in, UCX would be loaded into every LMDX program, fabric or not, and its memory
// hooks (libucm patches mmap, munmap, madvise and more as it starts) would run under every
// process: a cost no job that does not ask for fabric should pay, and something ThreadSanitizer's
// own interceptors cannot live beside.
struct UcxLibrary {
  decltype(&::ucp_config_read) config_read;
  decltype(&::ucp_config_release) config_release;
  decltype(&::ucp_config_modify) config_modify;
  decltype(&::ucp_init_version) init_version;
  decltype(&::ucp_cleanup) cleanup;
  decltype(&::ucp_worker_create) worker_create;
  decltype(&::ucp_worker_destroy) worker_destroy;
  decltype(&::ucp_worker_query) worker_query;
  decltype(&::ucp_worker_get_address) worker_get_address;
  decltype(&::ucp_worker_release_address) worker_release_address;
  decltype(&::ucp_worker_get_efd) worker_get_efd;
  decltype(&::ucp_worker_arm) worker_arm;
  decltype(&::ucp_worker_progress) worker_progress;
  decltype(&::ucp_worker_set_am_recv_handler) worker_set_am_recv_handler;
  decltype(&::ucp_ep_create) ep_create;
  decltype(&::ucp_ep_close_nbx) ep_close_nbx;
  decltype(&::ucp_am_send_nbx) am_send_nbx;
  decltype(&::ucp_am_recv_data_nbx) am_recv_data_nbx;
  decltype(&::ucp_am_data_release) am_data_release;
  decltype(&::ucp_request_check_status) request_check_status;
  decltype(&::ucp_request_free) request_free;
  decltype(&::ucp_mem_map) mem_map;
  decltype(&::ucp_mem_unmap) mem_unmap;
  decltype(&::ucp_rkey_pack) rkey_pack;
  decltype(&::ucp_rkey_buffer_release) rkey_buffer_release;
  decltype(&::ucp_ep_rkey_unpack) ep_rkey_unpack;
  decltype(&::ucp_rkey_destroy) rkey_destroy;
  decltype(&::ucp_get_nbx) get_nbx;
  decltype(&::ucs_status_string) status_string;
};

// The library, opened once per process and kept open (UCX is not made to be unloaded). Throws
// lmdx::Error(LMDX_ERR_NETWORK), naming the library or the function, when it cannot be had.
const UcxLibrary& Ucx();

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_FABRIC_INTERNAL_UCX_LIBRARY_H_
