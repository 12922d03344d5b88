#ifndef LMDX_API_INTERNAL_SHARED_VARIABLES_H_
#define LMDX_API_INTERNAL_SHARED_VARIABLES_H_

namespace lmdx::api {

// Creates or finds every variable registered with lmdx_register_shared and hands each its
// address. Called once per node by lmdx_init, after the node joined the job; later
// registrations are bound as they come.
void BindSharedVariables();

}  // namespace lmdx::api

#endif  // LMDX_API_INTERNAL_SHARED_VARIABLES_H_
