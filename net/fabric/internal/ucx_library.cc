#include "net/fabric/internal/ucx_library.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "base/error.h"

namespace lmdx::net::internal {
namespace {

// The runtime package's name for the library (libucx0), as the headers' ABI expects it.
constexpr const char* kLibrary = "libucp.so.0";

struct Loaded {
  UcxLibrary library{};
  std::string error;  // empty when every function was found
};

Loaded Load() {
  Loaded loaded;
  void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    loaded.error = std::string("cannot open ") + kLibrary + ": " + (why != nullptr ? why : "?");
    return loaded;
  }
  // dlsym on libucp's handle also searches its dependencies, where ucs_status_string lives.
  auto find = [&](auto& function, const char* name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(::dlsym(handle, name));
    if (function == nullptr && loaded.error.empty()) {
      loaded.error = std::string(kLibrary) + " has no " + name;
    }
  };
  UcxLibrary& ucx = loaded.library;
  find(ucx.config_read, "ucp_config_read");
  find(ucx.config_release, "ucp_config_release");
  find(ucx.config_modify, "ucp_config_modify");
  find(ucx.init_version, "ucp_init_version");
  find(ucx.cleanup, "ucp_cleanup");
  find(ucx.worker_create, "ucp_worker_create");
  find(ucx.worker_destroy, "ucp_worker_destroy");
  find(ucx.worker_query, "ucp_worker_query");
  find(ucx.worker_get_address, "ucp_worker_get_address");
  find(ucx.worker_release_address, "ucp_worker_release_address");
  find(ucx.worker_get_efd, "ucp_worker_get_efd");
  find(ucx.worker_arm, "ucp_worker_arm");
  find(ucx.worker_progress, "ucp_worker_progress");
  find(ucx.worker_set_am_recv_handler, "ucp_worker_set_am_recv_handler");
  find(ucx.ep_create, "ucp_ep_create");
  find(ucx.ep_close_nbx, "ucp_ep_close_nbx");
  find(ucx.am_send_nbx, "ucp_am_send_nbx");
  find(ucx.am_recv_data_nbx, "ucp_am_recv_data_nbx");
  find(ucx.am_data_release, "ucp_am_data_release");
  find(ucx.request_check_status, "ucp_request_check_status");
  find(ucx.request_free, "ucp_request_free");
  find(ucx.mem_map, "ucp_mem_map");
  find(ucx.mem_unmap, "ucp_mem_unmap");
  find(ucx.rkey_pack, "ucp_rkey_pack");
  find(ucx.rkey_buffer_release, "ucp_rkey_buffer_release");
  find(ucx.ep_rkey_unpack, "ucp_ep_rkey_unpack");
  find(ucx.rkey_destroy, "ucp_rkey_destroy");
  find(ucx.get_nbx, "ucp_get_nbx");
  find(ucx.status_string, "ucs_status_string");
  return loaded;
}

}  // namespace

const UcxLibrary& Ucx() {
  static const Loaded loaded = Load();
  if (!loaded.error.empty()) throw Error(LMDX_ERR_NETWORK, "UCX cannot start: " + loaded.error);
  return loaded.library;
}

}  // namespace lmdx::net::internal
