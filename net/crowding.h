// Deadlines a live peer must meet (a handshake's, a heartbeat's) assume that it gets a core
// within them. On a host that runs many more nodes than it has cores (`lmdx run` starts up to
// 1,024 on one machine), a process may wait seconds for its turn, and a deadline made for a
// quiet host would take a slow node for a dead one. So they grow with the crowd: the scale is 1
// up to kNodesPerCore nodes per core on the most crowded host of the job, and grows in
// proportion beyond it.
//
// Process-wide, since a process is one node (or one launcher).
#ifndef LMDX_NET_CROWDING_H_
#define LMDX_NET_CROWDING_H_

#include <string>

#include "net/wire.pb.h"

namespace lmdx::net::crowding {

// 128 nodes on 2 cores start, exchange and end in 4 s on this project's VM (well inside every
// deadline); 1,024 take over 30 s, and their handshakes with rank 0 miss 5 s.
inline constexpr long kNodesPerCore = 32;

// The scale for `nodes` nodes on a host with `cores` cores (at least 1).
int ScaleFor(long nodes, long cores);
// The scale in force (1 until set).
int Scale();
// base_ms times the scale in force.
int Scaled(int base_ms);
// Before the job table is known: as if all `size` nodes ran on this host (as `lmdx run`'s do).
void AssumeAllHere(int size);
// The job table is known: the most crowded host decides, counted with this host's cores.
void Learn(const wire::JobTable& table);

}  // namespace lmdx::net::crowding

#endif  // LMDX_NET_CROWDING_H_
