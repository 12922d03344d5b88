// The configuration's modules as the API applies them (api/modules.cc): this rank's module, the
// checks at lmdx_init, the shared-memory rules, and the DSM's choice of protocol for what a module
// creates. docs/configuration.md#modules describes them.
#ifndef LMDX_API_INTERNAL_MODULES_H_
#define LMDX_API_INTERNAL_MODULES_H_

#include <string>
#include <string_view>

#include "config/config.h"
#include "dsm/options.h"

namespace lmdx::api {

// lmdx_init and lmdx_init_spmd: the program's arguments, which lmdx_run_modules hands to the
// module's entry. Either may be null.
void RecordArguments(int* argc, char*** argv);

// lmdx_init and lmdx_init_spmd, before the node starts: checks the modules against the job
// (every rank they name exists, every rank is in one) and makes rank's module this process's.
// Throws lmdx::Error(LMDX_ERR_CONFIG) naming the file and the rank.
void StartModules(const config::Settings& settings, int rank, int size, bool spmd);

// This node as the creator of shared regions: its module's protocol when the module names one.
dsm::Creator ThisCreator();

// The protocol and home of a region rank 0 places for creator: a dsm.region that names a
// protocol, else the creator module's protocol, else dsm.protocol; the home from the region or
// dsm.home.
dsm::RegionPolicy RegionPolicyFor(const config::Settings& settings, std::string_view name,
                                  const dsm::Creator& creator);

// False when this rank's module talks by messages only (shares_memory: false).
bool SharesMemory();

// The calls that hand out shared memory: LMDX_ERR_MISUSE naming the module when this rank's
// module does not share memory.
void RequireSharedMemory();

// lmdx_malloc: the shared heap runs the node's protocol (heap_protocol) whatever a module asks
// for; a module that names another is LMDX_ERR_CONFIG rather than silently given the heap's.
void RequireHeapProtocol(const std::string& heap_protocol);

}  // namespace lmdx::api

#endif  // LMDX_API_INTERNAL_MODULES_H_
