// lmdx_register_shared: file-scope shared variables (lmdxpp's LMDX_shared) bound on every node.
//
// lmdxpp turns `LMDX_shared T name[dims];` into a pointer and a constructor that registers it
// here before main runs. Every node binds every registered variable while lmdx_init starts it,
// before rank 0 runs main and before the node lets any LMDX thread run (threads::Service::Open):
// a thread may run on any node and must find the variable's pointer set there.
#include <mutex>
#include <string>
#include <vector>

#include "api/internal/modules.h"
#include "api/internal/runtime_state.h"
#include "api/internal/shared_variables.h"
#include "dsm/service.h"

namespace lmdx::api {
namespace {

struct Registration {
  std::string name;
  std::size_t bytes;
  void (*bind)(void*);
};

struct Registry {
  std::mutex mutex;
  std::vector<Registration> pending;  // registered, not yet bound on this node
  bool bound = false;                 // BindSharedVariables has run: bind new ones at once
};

// Constructed on first use: registrations come from constructors of the program, which may run
// before this file's own static objects.
Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

void Bind(const Registration& registration) {
  dsm::Service* dsm = dsm::Current();
  if (dsm == nullptr) throw Error(LMDX_ERR_NOT_INITIALIZED, "the DSM is not running");
  void* address = dsm->SharedVariable(registration.name, registration.bytes);
  registration.bind(address);
}

}  // namespace

void BindSharedVariables() {
  Registry& registry = TheRegistry();
  std::vector<Registration> pending;
  {
    std::lock_guard lock(registry.mutex);
    registry.bound = true;
    pending.swap(registry.pending);
  }
  // A module that talks by messages only has no shared memory; its pointers stay null.
  if (!SharesMemory()) pending.clear();
  for (const Registration& registration : pending) {
    try {
      Bind(registration);
    } catch (const Error& error) {
      // Rank 0 may end the job while this node is still starting (a main that returns at once):
      // then there is nothing to bind for, and the node goes on to leave with the job's status.
      net::Node* node = CurrentNode();
      if (node != nullptr && node->ending()) return;
      Fail("lmdx_init", error.code(),
           "the LMDX_shared variable " + registration.name + " (" +
               std::to_string(registration.bytes) + " bytes) cannot be created: " + error.what());
      return;
    }
  }
}

}  // namespace lmdx::api

extern "C" int lmdx_register_shared(const char* name, size_t bytes, void (*bind)(void*)) {
  using namespace lmdx::api;
  if (name == nullptr || *name == '\0' || bind == nullptr || bytes == 0) {
    return Fail("lmdx_register_shared", LMDX_ERR_INVALID_ARGUMENT,
                "needs a name, a size above 0 and a bind function");
  }
  Registry& registry = TheRegistry();
  Registration registration{name, bytes, bind};
  {
    std::lock_guard lock(registry.mutex);
    if (!registry.bound) {
      registry.pending.push_back(std::move(registration));
      return LMDX_OK;
    }
  }
  // Registered after lmdx_init (a library loaded later): bind now.
  return Guard("lmdx_register_shared", [&] {
    RequireSharedMemory();
    Bind(registration);
    return LMDX_OK;
  });
}
