// The shared-memory calls of the C API: lmdx_malloc, lmdx_free, lmdx_alloc_collective,
// lmdx_shared_var, lmdx_lookup, lmdx_get, lmdx_put.
#include <atomic>
#include <string>

#include "api/internal/modules.h"
#include "api/internal/runtime_state.h"
#include "base/log.h"
#include "dsm/service.h"

namespace lmdx::api {

void WarnIfFaultSignalBlocked(const char* call) {
  dsm::Service* dsm = dsm::Current();
  if (dsm == nullptr) return;  // before lmdx_init: checked again at the next call
  fault_signal_checked = true;
  const char* blocked = dsm->BlockedFaultSignal();
  static std::atomic<bool> said{false};
  if (blocked == nullptr || said.exchange(true)) return;
  std::string signal = blocked;
  LogLine(std::string(call) + ": this thread blocks " + signal +
          ", which brings the node's faults on shared memory to LMDX: at the thread's first fault "
          "the kernel kills the node, before LMDX can serve it or say why; unblock " +
          signal +
          " (pthread_sigmask) in every thread that touches shared memory, or move its "
          "data with lmdx_get and lmdx_put, which never fault");
}

namespace {

dsm::Service& RequireDsm(const char* call) {
  RequireNode(call);
  dsm::Service* service = dsm::Current();
  if (service == nullptr) throw Error(LMDX_ERR_NOT_INITIALIZED, "the DSM is not running");
  return *service;
}

// Runs body (returning a pointer to shared memory) and turns a failure into Fail(call, ...) and
// nullptr. A module that does not share memory gets none.
template <typename Body>
void* GuardPointer(const char* call, Body body) {
  void* result = nullptr;
  int status = Guard(call, [&] {
    dsm::Service& dsm = RequireDsm(call);
    RequireSharedMemory();
    result = body(dsm);
    return LMDX_OK;
  });
  return status == LMDX_OK ? result : nullptr;
}

}  // namespace
}  // namespace lmdx::api

using lmdx::api::Guard;
using lmdx::api::GuardPointer;
using lmdx::api::RequireDsm;

extern "C" {

void* lmdx_malloc(size_t bytes) {
  return GuardPointer("lmdx_malloc", [bytes](lmdx::dsm::Service& dsm) {
    lmdx::api::RequireHeapProtocol(dsm.heap_protocol());
    return dsm.Malloc(bytes);
  });
}

void lmdx_free(void* block) {
  Guard("lmdx_free", [block] {
    if (block == nullptr) return LMDX_OK;
    RequireDsm("lmdx_free").Free(block);
    return LMDX_OK;
  });
}

// The calls that hand out shared memory, except lmdx_malloc (too quick for a system call), check
// the caller's signal mask each time: what the thread does next is touch the memory.
void* lmdx_alloc_collective(size_t bytes) {
  return GuardPointer("lmdx_alloc_collective", [bytes](lmdx::dsm::Service& dsm) {
    lmdx::api::WarnIfFaultSignalBlocked("lmdx_alloc_collective");
    return dsm.AllocCollective(bytes);
  });
}

void* lmdx_shared_var(const char* name, size_t bytes) {
  return GuardPointer("lmdx_shared_var", [name, bytes](lmdx::dsm::Service& dsm) {
    lmdx::api::WarnIfFaultSignalBlocked("lmdx_shared_var");
    if (name == nullptr) throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the name is null");
    return dsm.SharedVariable(name, bytes);
  });
}

void* lmdx_lookup(const char* name, size_t* bytes) {
  return GuardPointer("lmdx_lookup", [name, bytes](lmdx::dsm::Service& dsm) {
    lmdx::api::WarnIfFaultSignalBlocked("lmdx_lookup");
    if (name == nullptr) throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the name is null");
    return dsm.Lookup(name, bytes);
  });
}

int lmdx_get(void* destination, const void* shared_source, size_t bytes) {
  return Guard("lmdx_get", [=] {
    RequireDsm("lmdx_get").Get(destination, shared_source, bytes);
    return LMDX_OK;
  });
}

int lmdx_put(void* shared_destination, const void* source, size_t bytes) {
  return Guard("lmdx_put", [=] {
    RequireDsm("lmdx_put").Put(shared_destination, source, bytes);
    return LMDX_OK;
  });
}

int lmdx_is_shared(const void* address) {
  lmdx::dsm::Service* dsm = lmdx::dsm::Current();
  return dsm != nullptr && dsm->Contains(address) ? 1 : 0;
}

const char* lmdx_protocol_of(const void* address) {
  const char* name = nullptr;
  int status = Guard("lmdx_protocol_of", [address, &name] {
    name = RequireDsm("lmdx_protocol_of").ProtocolName(address);
    return LMDX_OK;
  });
  return status == LMDX_OK ? name : nullptr;
}

}  // extern "C"
