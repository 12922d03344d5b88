// The task runtime's part of `--stats`: every node's counters, gathered by rank 0 at the job's end
// and printed under the DSM's table when any node spawned a task.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "tasks/internal/message_types.h"
#include "tasks/runtime.h"
#include "tasks/tasks.pb.h"

namespace lmdx::tasks {
namespace {

wire::Counters CountersToWire(const Counters& counters) {
  wire::Counters out;
  out.set_spawned(counters.spawned.load(std::memory_order_relaxed));
  out.set_run(counters.run.load(std::memory_order_relaxed));
  out.set_stolen(counters.stolen.load(std::memory_order_relaxed));
  out.set_given(counters.given.load(std::memory_order_relaxed));
  out.set_pushed(counters.pushed.load(std::memory_order_relaxed));
  out.set_received(counters.received.load(std::memory_order_relaxed));
  out.set_steal_attempts(counters.steal_attempts.load(std::memory_order_relaxed));
  out.set_steal_failures(counters.steal_failures.load(std::memory_order_relaxed));
  out.set_idle_ns(counters.idle_ns.load(std::memory_order_relaxed));
  return out;
}

}  // namespace

void Runtime::RegisterStatsHandler() {
  net::SetMessageTypeName(internal::kTaskStats, "task-stats");
  node_.Handle(internal::kTaskStats, [this](net::InboundMessage&, const net::ReplyTo* to) {
    if (to != nullptr) node_.Reply(*to, CountersToWire(counters_).SerializeAsString());
  });
}

std::string Runtime::JobStatsTable() {
  std::vector<wire::Counters> nodes;
  for (int rank = 0; rank < node_.size(); ++rank) {
    wire::Counters counters;
    if (rank == node_.rank()) {
      counters = CountersToWire(counters_);
    } else {
      try {
        if (!counters.ParseFromString(node_.Request(rank, internal::kTaskStats, {}).body)) {
          throw Error(LMDX_ERR_INTERNAL, "a malformed reply");
        }
      } catch (const Error& error) {
        LogLine("task statistics of rank " + std::to_string(rank) +
                " are missing: " + error.what());
      }
    }
    nodes.push_back(counters);
  }
  std::uint64_t spawned = 0;
  for (const wire::Counters& counters : nodes) spawned += counters.spawned();
  if (spawned == 0) return {};
  std::string table = "lmdx task statistics (scheduler " +
                      std::string(SchedulingName(scheduling())) + ", " +
                      std::to_string(options_.runners) + " runner" +
                      (options_.runners == 1 ? "" : "s") + " per node)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%4s %12s %12s %8s %8s %8s %8s %9s %9s %10s\n", "rank",
                "spawned", "run", "stolen", "given", "pushed", "received", "steals", "failed",
                "idle ms");
  table += line;
  for (std::size_t rank = 0; rank < nodes.size(); ++rank) {
    const wire::Counters& c = nodes[rank];
    std::snprintf(line, sizeof line,
                  "%4zu %12" PRIu64 " %12" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
                  " %8" PRIu64 " %9" PRIu64 " %9" PRIu64 " %10.1f\n",
                  rank, c.spawned(), c.run(), c.stolen(), c.given(), c.pushed(), c.received(),
                  c.steal_attempts(), c.steal_failures(), static_cast<double>(c.idle_ns()) / 1e6);
    table += line;
  }
  return table;
}

const char* SchedulingName(Scheduling scheduling) {
  switch (scheduling) {
    case Scheduling::kSteal: return "steal";
    case Scheduling::kShare: return "share";
    case Scheduling::kLeastLoaded: return "least_loaded";
    case Scheduling::kUser: return "the program's own";
  }
  return "unknown";
}

}  // namespace lmdx::tasks
