// The shared-memory calls of the C API: lmdx_malloc, lmdx_free, lmdx_alloc_collective,
// lmdx_shared_var, lmdx_lookup, lmdx_get, lmdx_put.
#include <string>

#include "api/internal/modules.h"
#include "api/internal/runtime_state.h"
#include "dsm/service.h"

namespace lmdx::api {
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

void* lmdx_alloc_collective(size_t bytes) {
  return GuardPointer("lmdx_alloc_collective",
                      [bytes](lmdx::dsm::Service& dsm) { return dsm.AllocCollective(bytes); });
}

void* lmdx_shared_var(const char* name, size_t bytes) {
  return GuardPointer("lmdx_shared_var", [name, bytes](lmdx::dsm::Service& dsm) {
    if (name == nullptr) throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the name is null");
    return dsm.SharedVariable(name, bytes);
  });
}

void* lmdx_lookup(const char* name, size_t* bytes) {
  return GuardPointer("lmdx_lookup", [name, bytes](lmdx::dsm::Service& dsm) {
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
