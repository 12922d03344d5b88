// Tasks: lmdx_spawn and lmdx_wait over the task runtime (tasks/runtime.h).
#include "api/internal/runtime_state.h"
#include "tasks/runtime.h"

namespace lmdx::api {
namespace {

tasks::Runtime& RequireTasks(const char* call) {
  RequireNode(call);
  tasks::Runtime* runtime = tasks::Current();
  if (runtime == nullptr) throw Error(LMDX_ERR_NOT_INITIALIZED, "the task runtime is not running");
  return *runtime;
}

}  // namespace
}  // namespace lmdx::api

extern "C" {

int lmdx_spawn(void (*fn)(void* args), void* args, size_t size) {
  return lmdx::api::Guard("lmdx_spawn", [&] {
    lmdx::api::RequireTasks("lmdx_spawn").Spawn(fn, args, size);
    return LMDX_OK;
  });
}

int lmdx_spawn_copy(void (*fn)(void* args), const void* args, size_t size) {
  return lmdx::api::Guard("lmdx_spawn_copy", [&] {
    lmdx::api::RequireTasks("lmdx_spawn_copy").Spawn(fn, args, size, /*write_back=*/false);
    return LMDX_OK;
  });
}

int lmdx_wait(void) {
  return lmdx::api::Guard("lmdx_wait", [&] {
    lmdx::api::RequireTasks("lmdx_wait").Wait();
    return LMDX_OK;
  });
}

int lmdx_set_task_scheduler(lmdx_task_placement_fn place, void* state) {
  return lmdx::api::Guard("lmdx_set_task_scheduler", [&] {
    lmdx::api::RequireTasks("lmdx_set_task_scheduler").SetUserPlacement(place, state);
    return LMDX_OK;
  });
}

}  // extern "C"
