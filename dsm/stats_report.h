// The end-of-job statistics of LMDX_STATS: a table per node for the terminal, the same as JSON.
#ifndef LMDX_DSM_STATS_REPORT_H_
#define LMDX_DSM_STATS_REPORT_H_

#include <string>

#include "dsm/dsm.pb.h"

namespace lmdx::dsm {

// One row per node (faults, pages, invalidations, messages), then messages and bytes by type.
std::string FormatStatsTable(const wire::JobStats& job);
std::string StatsAsJson(const wire::JobStats& job);

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_STATS_REPORT_H_
