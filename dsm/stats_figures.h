// A node's statistics as figures of the report (dsm.proto's NodeStats): from a set of counters,
// and summed over the protocols a node runs.
#ifndef LMDX_DSM_STATS_FIGURES_H_
#define LMDX_DSM_STATS_FIGURES_H_

#include "consistency/counters.h"
#include "dsm/dsm.pb.h"

namespace lmdx::dsm {

// Sets the figures counters holds (faults, fetches, diffs, times...) in stats.
void FillCounters(const consistency::Counters& counters, wire::NodeStats& stats);
// True when any count of stats is not zero (the protocol did something).
bool AnyFigure(const wire::NodeStats& stats);
// Adds every number of part (the rank aside) to total's.
void AddFigures(const wire::NodeStats& part, wire::NodeStats& total);

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_STATS_FIGURES_H_
