// The fabric transport's one-sided reads: memory exposed for peers to read, and reads of theirs.
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "net/fabric/fabric_transport.h"
#include "net/fabric/internal/fabric_state.h"
#include "net/internal/frame_assembly.h"
#include "net/fabric/internal/ucx_am_header.h"
#include "net/fabric/internal/ucx_library.h"
#include "net/fabric/internal/ucx_worker.h"

namespace lmdx::net {

using internal::AmHeader;
using internal::kAmHeaderSize;
using internal::kAmPrefixSize;
using internal::Ucx;
using internal::UcxStatusText;

void FabricTransport::DestroyKeysLocked(Peer& peer) {
  for (auto& [packed, key] : peer.keys) Ucx().rkey_destroy(key);
  peer.keys.clear();
}

std::optional<std::string> FabricTransport::Expose(void* base, std::size_t size) {
  std::lock_guard lock(ucx_mutex_);
  if (closing_) throw Error(LMDX_ERR_NETWORK, "fabric: memory exposed after the transport closed");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_PROT;
  params.address = base;
  params.length = size;
  params.prot =
      UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE | UCP_MEM_MAP_PROT_REMOTE_READ;
  ucp_mem_h memory = nullptr;
  ucs_status_t status = Ucx().mem_map(worker_->context(), &params, &memory);
  if (status != UCS_OK) {
    throw Error(LMDX_ERR_NETWORK,
                "fabric: cannot expose " + std::to_string(size) +
                    " bytes for reading: " + UcxStatusText("ucp_mem_map", status));
  }
  void* packed = nullptr;
  std::size_t packed_size = 0;
  status = Ucx().rkey_pack(worker_->context(), memory, &packed, &packed_size);
  if (status != UCS_OK) {
    Ucx().mem_unmap(worker_->context(), memory);
    throw Error(LMDX_ERR_NETWORK, "fabric: " + UcxStatusText("ucp_rkey_pack", status));
  }
  std::string key(static_cast<const char*>(packed), packed_size);
  Ucx().rkey_buffer_release(packed);
  exposed_.push_back(memory);
  return key;
}

bool FabricTransport::Read(int dest, std::uint64_t remote_address, const std::string& key,
                           void* local, std::size_t size, std::function<void(bool ok)> on_done) {
  auto op = std::make_unique<GetOp>();
  op->owner = this;
  op->on_done = std::move(on_done);
  bool done = false;
  bool ok = false;
  {
    std::lock_guard lock(ucx_mutex_);
    Peer& peer = *peers_.at(static_cast<std::size_t>(dest));
    ucp_ep_h endpoint = closing_ || peer.lost ? nullptr : EndpointLocked(peer);
    ucp_rkey_h rkey = nullptr;
    if (endpoint != nullptr) {
      auto it = peer.keys.find(key);
      if (it == peer.keys.end()) {
        if (Ucx().ep_rkey_unpack(endpoint, key.data(), &rkey) == UCS_OK) {
          peer.keys.emplace(key, rkey);
        }
      } else {
        rkey = it->second;
      }
    }
    if (rkey == nullptr) {
      done = true;
    } else {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
      param.cb.send = &FabricTransport::OnGetDone;
      param.user_data = op.get();
      ucs_status_ptr_t request = Ucx().get_nbx(endpoint, local, size, remote_address, rkey, &param);
      if (UCS_PTR_IS_ERR(request)) {
        LoseLocked(peer, UcxStatusText("ucp_get_nbx", UCS_PTR_STATUS(request)));
        done = true;
      } else if (request == nullptr) {
        done = ok = true;
      } else {
        gets_in_flight_.insert(op.release());
      }
    }
  }
  if (done) {
    engine_.Post([] {});  // a peer lost meanwhile is reported from the dispatching thread
    if (op->on_done) op->on_done(ok);
  }
  return true;
}

void FabricTransport::OnGetDone(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<GetOp> op(static_cast<GetOp*>(user_data));  // UCX is done with it
  FabricTransport* self = op->owner;
  self->gets_in_flight_.erase(op.get());
  self->finished_sends_.emplace_back(std::move(op->on_done), status == UCS_OK);
  Ucx().request_free(request);
}

}  // namespace lmdx::net
