#include "dsm/stats_report.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace lmdx::dsm {
namespace {

std::string Line(const char* format, auto... values) {
  char text[512];
  std::snprintf(text, sizeof text, format, values...);
  return text;
}

}  // namespace

std::string FormatStatsTable(const wire::JobStats& job) {
  const std::string main_protocol =
      job.nodes_size() > 0 ? job.nodes(0).protocol() : std::string("?");
  // The protocols the configuration gave regions of their own, which did work on some node.
  std::vector<std::string> others;
  for (const auto& node : job.nodes()) {
    for (const auto& part : node.protocols()) {
      if (part.protocol() != main_protocol &&
          std::find(others.begin(), others.end(), part.protocol()) == others.end()) {
        others.push_back(part.protocol());
      }
    }
  }
  std::string out = "lmdx statistics (protocol " + main_protocol;
  for (std::size_t i = 0; i < others.size(); ++i) {
    out += (i == 0 ? "; regions under " : ", ") + others[i];
  }
  out += ")";
  if (job.nodes_size() > 0 && !job.nodes(0).page_access().empty()) {
    out += ", pages protected by " + job.nodes(0).page_access();
  }
  out += "\n";
  out += Line("%4s %8s %8s %7s %8s %6s %6s %8s %8s %6s %8s %6s %6s %10s %12s %9s\n", "rank",
              "rfault", "wfault", "local", "fetched", "zero", "upgr", "inv-sent", "inv-recv",
              "downgr", "dir-req", "gets", "puts", "msgs-sent", "bytes-sent", "fault-ms");
  for (const auto& node : job.nodes()) {
    out +=
        Line("%4d %8lu %8lu %7lu %8lu %6lu %6lu %8lu %8lu %6lu %8lu %6lu %6lu %10lu %12lu %9.2f\n",
             node.rank(), node.read_faults(), node.write_faults(), node.local_faults(),
             node.pages_fetched(), node.zero_pages(), node.upgrades(), node.invalidations_sent(),
             node.invalidations_received(), node.downgrades(), node.directory_requests(),
             node.explicit_gets(), node.explicit_puts(), node.messages_sent(), node.bytes_sent(),
             node.fault_ms());
  }
  out += Line("%4s %7s %7s %10s %8s %8s %8s %8s %8s %8s %9s %9s %9s %8s %10s %10s\n", "rank",
              "twins", "diffs", "diff-bytes", "applied", "notices", "updates", "refetch",
              "prefetch", "streamed", "strm-used", "direct-rd", "direct-wr", "protect",
              "release-ms", "acquire-ms");
  for (const auto& node : job.nodes()) {
    out += Line(
        "%4d %7lu %7lu %10lu %8lu %8lu %8lu %8lu %8lu %8lu %9lu %9lu %9lu %8lu %10.2f %10.2f\n",
        node.rank(), node.twins(), node.diffs_made(), node.diff_bytes(), node.diffs_applied(),
        node.write_notices(), node.updates_sent(), node.pages_refetched(), node.pages_prefetched(),
        node.pages_streamed(), node.streamed_used(), node.pages_read_directly(),
        node.diffs_written_directly(), node.protection_changes(), node.release_ms(),
        node.acquire_ms());
  }
  bool lazy = false;
  for (const auto& node : job.nodes())
    lazy = lazy || node.diffs_fetched() + node.kept_diff_peak() > 0;
  if (lazy) {
    out += Line("%4s %13s %15s %14s %12s %13s\n", "rank", "diffs-fetched", "diffs-discarded",
                "kept-peak", "home-upd-out", "home-upd-in");
    for (const auto& node : job.nodes()) {
      out += Line("%4d %13lu %15lu %14lu %12lu %13lu\n", node.rank(), node.diffs_fetched(),
                  node.diffs_discarded(), node.kept_diff_peak(), node.home_updates_sent(),
                  node.home_updates_applied());
    }
  }
  bool closed = false;
  for (const auto& node : job.nodes()) closed = closed || node.pages_closed() > 0;
  if (closed) {
    // Under mprotect, pages closed to keep the mappings within the kernel's limit.
    out += Line("%4s %12s %10s %10s\n", "rank", "pages-closed", "runs-peak", "map-budget");
    for (const auto& node : job.nodes()) {
      out += Line("%4d %12lu %10lu %10lu\n", node.rank(), node.pages_closed(),
                  node.mapping_runs_peak(), node.mapping_budget());
    }
  }
  bool several = false;
  for (const auto& node : job.nodes()) several = several || node.protocols_size() > 1;
  if (several) {
    out += "by protocol\n";
    out += Line("%4s %-7s %8s %8s %8s %7s %7s %10s %8s %8s %8s %9s %10s %10s\n", "rank", "proto",
                "rfault", "wfault", "fetched", "twins", "diffs", "diff-bytes", "applied", "notices",
                "protect", "fault-ms", "release-ms", "acquire-ms");
    for (const auto& node : job.nodes()) {
      for (const auto& part : node.protocols()) {
        out += Line("%4d %-7s %8lu %8lu %8lu %7lu %7lu %10lu %8lu %8lu %8lu %9.2f %10.2f %10.2f\n",
                    node.rank(), part.protocol().c_str(), part.read_faults(), part.write_faults(),
                    part.pages_fetched(), part.twins(), part.diffs_made(), part.diff_bytes(),
                    part.diffs_applied(), part.write_notices(), part.protection_changes(),
                    part.fault_ms(), part.release_ms(), part.acquire_ms());
      }
    }
  }
  out += "messages sent by type (frames / bytes, per rank)\n";
  std::map<std::string, std::map<int, std::pair<std::uint64_t, std::uint64_t>>> by_type;
  for (const auto& node : job.nodes()) {
    for (const auto& traffic : node.traffic()) {
      if (traffic.sent_frames() == 0) continue;
      by_type[traffic.type()][node.rank()] = {traffic.sent_frames(), traffic.sent_bytes()};
    }
  }
  for (const auto& [type, ranks] : by_type) {
    out += Line("  %-16s", type.c_str());
    for (const auto& [rank, figures] : ranks) {
      out += Line(" r%d:%lu/%lu", rank, figures.first, figures.second);
    }
    out += "\n";
  }
  std::string fallbacks;
  for (const auto& node : job.nodes()) {
    if (node.network_hint_fallbacks() == 0) continue;
    fallbacks += Line(" r%d:%lu", node.rank(), node.network_hint_fallbacks());
  }
  if (!fallbacks.empty()) out += "network hints that fell back (per rank)" + fallbacks + "\n";
  return out;
}

std::string StatsAsJson(const wire::JobStats& job) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(job, &json, options);
  return json;
}

}  // namespace lmdx::dsm
