// Groups: lmdx_group_create, group sends and the collectives (groups/service.h does the work).
#include <limits>
#include <memory>
#include <string>

#include "api/internal/runtime_state.h"
#include "dsm/service.h"
#include "groups/service.h"

namespace lmdx::api {
namespace {

using groups::Group;
using groups::Service;

Group& FromHandle(const char* call, lmdx_group_t handle) {
  RequireNode(call);
  if (handle == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the group handle is NULL");
  return *reinterpret_cast<Group*>(handle);
}

std::string Quoted(const Group& group) { return "group \"" + Service::Name(group) + "\""; }

void CheckBuffer(const Group& group, const void* buffer, std::size_t bytes, const char* what) {
  if (buffer == nullptr && bytes > 0) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, Quoted(group) + ": the " + what +
                                               " buffer is NULL but should hold " +
                                               std::to_string(bytes) + " bytes");
  }
}

// length * the group's size, the bytes of a gather's or an all-to-all's whole buffer.
std::size_t AllBlocks(const Group& group, std::size_t length) {
  auto members = static_cast<std::size_t>(Service::Size(group));
  if (length > std::numeric_limits<std::size_t>::max() / members) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, Quoted(group) + ": " + std::to_string(length) +
                                               " bytes per member overflow a buffer for " +
                                               std::to_string(members) + " members");
  }
  return length * members;
}

// The transports read and write buffers without faulting shared pages in: a buffer in the shared
// range goes through a private copy, filled through the protocol before the call when the call
// reads it, and written back after the call when the call fills it.
class Staging {
 public:
  Staging(void* buffer, std::size_t bytes, bool read) : buffer_(buffer) {
    dsm_ = dsm::Current();
    if (dsm_ == nullptr || bytes == 0 || buffer == nullptr || !dsm_->Contains(buffer)) return;
    copy_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
    if (read) dsm_->Get(copy_.get(), buffer, bytes);
  }
  Staging(const void* buffer, std::size_t bytes)
      : Staging(const_cast<void*>(buffer), bytes, /*read=*/true) {}
  void* data() const { return copy_ ? copy_.get() : buffer_; }
  // Writes the first bytes the call filled back into the shared buffer.
  void WriteBack(std::size_t bytes) const {
    if (copy_ && bytes > 0) dsm_->Put(buffer_, copy_.get(), bytes);
  }

 private:
  void* buffer_;
  dsm::Service* dsm_ = nullptr;
  std::unique_ptr<std::byte[]> copy_;
};

template <typename Body>
int OnGroup(const char* call, lmdx_group_t handle, Body body) {
  return Guard(call, [&] { return body(groups::Current(), FromHandle(call, handle)); });
}

}  // namespace
}  // namespace lmdx::api

using lmdx::api::Guard;
using lmdx::api::OnGroup;
using lmdx::api::Staging;
using lmdx::groups::Group;
using lmdx::groups::Service;

extern "C" {

lmdx_group_t lmdx_group_create(const char* name, const int* ranks, int count) {
  Group* created = nullptr;
  Guard("lmdx_group_create", [&] {
    lmdx::api::RequireNode("lmdx_group_create");
    if (name == nullptr) throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the group name is NULL");
    std::string quoted = std::string("group \"") + name + "\"";
    if (count < 1) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, quoted + ": the member count is " +
                                                       std::to_string(count) +
                                                       "; a group has at least one member");
    }
    if (ranks == nullptr) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, quoted + ": the member list is NULL");
    }
    created = lmdx::groups::Current().Create(
        name, std::span<const int>(ranks, static_cast<std::size_t>(count)));
    return LMDX_OK;
  });
  return reinterpret_cast<lmdx_group_t>(created);
}

int lmdx_group_size(lmdx_group_t group) {
  return OnGroup("lmdx_group_size", group, [](Service&, Group& g) { return Service::Size(g); });
}

int lmdx_group_rank(lmdx_group_t group) {
  return OnGroup("lmdx_group_rank", group, [](Service&, Group& g) { return Service::Index(g); });
}

int lmdx_group_send(lmdx_group_t group, const void* buf, size_t len) {
  return OnGroup("lmdx_group_send", group, [&](Service& service, Group& g) {
    lmdx::api::CheckBuffer(g, buf, len, "send");
    Staging send(buf, len);
    service.Send(g, send.data(), len);
    return LMDX_OK;
  });
}

int lmdx_group_recv(lmdx_group_t group, void* buf, size_t cap, lmdx_status* status) {
  return OnGroup("lmdx_group_recv", group, [&](Service& service, Group& g) {
    lmdx::api::CheckBuffer(g, buf, cap, "receive");
    Staging receive(buf, cap, /*read=*/false);
    lmdx::groups::Received received = service.Receive(g, receive.data(), cap);
    receive.WriteBack(received.length);
    if (status != nullptr) {
      *status = lmdx_status{};
      status->source = received.source;
      status->length = received.length;
    }
    return LMDX_OK;
  });
}

int lmdx_bcast(lmdx_group_t group, int root_index, void* buf, size_t len) {
  return OnGroup("lmdx_bcast", group, [&](Service& service, Group& g) {
    lmdx::api::CheckBuffer(g, buf, len, "broadcast");
    bool root = Service::Index(g) == root_index;
    Staging data(buf, len, /*read=*/root);
    service.Bcast(g, root_index, data.data(), len);
    if (!root) data.WriteBack(len);
    return LMDX_OK;
  });
}

int lmdx_gather(lmdx_group_t group, int root_index, const void* send, size_t len, void* recv) {
  return OnGroup("lmdx_gather", group, [&](Service& service, Group& g) {
    lmdx::api::CheckBuffer(g, send, len, "send");
    bool root = Service::Index(g) == root_index;
    std::size_t all = root ? lmdx::api::AllBlocks(g, len) : 0;
    if (root) lmdx::api::CheckBuffer(g, recv, all, "root's receive");
    Staging mine(send, len);
    Staging gathered(root ? recv : nullptr, all, /*read=*/false);
    service.Gather(g, root_index, mine.data(), len, gathered.data());
    gathered.WriteBack(all);
    return LMDX_OK;
  });
}

int lmdx_alltoall(lmdx_group_t group, const void* send, size_t len_per_member, void* recv) {
  return OnGroup("lmdx_alltoall", group, [&](Service& service, Group& g) {
    std::size_t all = lmdx::api::AllBlocks(g, len_per_member);
    lmdx::api::CheckBuffer(g, send, all, "send");
    lmdx::api::CheckBuffer(g, recv, all, "receive");
    Staging out(send, all);
    Staging in(recv, all, /*read=*/false);
    service.Alltoall(g, out.data(), len_per_member, in.data());
    in.WriteBack(all);
    return LMDX_OK;
  });
}

}  // extern "C"
