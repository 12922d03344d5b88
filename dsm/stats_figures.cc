#include "dsm/stats_figures.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

namespace lmdx::dsm {
namespace {

namespace pb = google::protobuf;

// The numbers of NodeStats that count or time something: every singular integer or double
// field but the rank.
template <typename Visit>
void ForEachFigure(const wire::NodeStats& stats, Visit visit) {
  const pb::Descriptor* type = stats.GetDescriptor();
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    if (field->is_repeated() || field->number() == wire::NodeStats::kRankFieldNumber) continue;
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64 ||
        field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
      visit(field);
    }
  }
}

}  // namespace

void FillCounters(const consistency::Counters& counters, wire::NodeStats& stats) {
  auto value = [](const consistency::Counters::Counter& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  stats.set_read_faults(value(counters.read_faults));
  stats.set_write_faults(value(counters.write_faults));
  stats.set_local_faults(value(counters.local_faults));
  stats.set_pages_fetched(value(counters.pages_fetched));
  stats.set_bytes_fetched(value(counters.bytes_fetched));
  stats.set_zero_pages(value(counters.zero_pages));
  stats.set_upgrades(value(counters.upgrades));
  stats.set_invalidations_sent(value(counters.invalidations_sent));
  stats.set_invalidations_received(value(counters.invalidations_received));
  stats.set_downgrades(value(counters.downgrades));
  stats.set_directory_requests(value(counters.directory_requests));
  stats.set_explicit_gets(value(counters.explicit_gets));
  stats.set_explicit_puts(value(counters.explicit_puts));
  stats.set_fault_ms(static_cast<double>(value(counters.fault_ns)) / 1e6);
  stats.set_twins(value(counters.twins));
  stats.set_diffs_made(value(counters.diffs_made));
  stats.set_diff_bytes(value(counters.diff_bytes));
  stats.set_diffs_applied(value(counters.diffs_applied));
  stats.set_write_notices(value(counters.write_notices));
  stats.set_updates_sent(value(counters.updates_sent));
  stats.set_pages_refetched(value(counters.pages_refetched));
  stats.set_pages_prefetched(value(counters.pages_prefetched));
  stats.set_pages_streamed(value(counters.pages_streamed));
  stats.set_streamed_used(value(counters.streamed_used));
  stats.set_pages_read_directly(value(counters.pages_read_directly));
  stats.set_diffs_written_directly(value(counters.diffs_written_directly));
  stats.set_bytes_read_directly(value(counters.bytes_read_directly));
  stats.set_bytes_written_directly(value(counters.bytes_written_directly));
  stats.set_diffs_fetched(value(counters.diffs_fetched));
  stats.set_diffs_discarded(value(counters.diffs_discarded));
  stats.set_kept_diff_peak(value(counters.kept_diff_peak));
  stats.set_home_updates_sent(value(counters.home_updates_sent));
  stats.set_home_updates_applied(value(counters.home_updates_applied));
  stats.set_protection_changes(value(counters.protection_changes));
  stats.set_homes_taken(value(counters.homes_taken));
  stats.set_release_ms(static_cast<double>(value(counters.release_ns)) / 1e6);
  stats.set_acquire_ms(static_cast<double>(value(counters.acquire_ns)) / 1e6);
}

bool AnyFigure(const wire::NodeStats& stats) {
  bool any = false;
  const pb::Reflection* reflection = stats.GetReflection();
  ForEachFigure(stats, [&](const pb::FieldDescriptor* field) {
    // Counts only: every protocol's hooks run at every synchronisation, so times are never zero.
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64) {
      any = any || reflection->GetUInt64(stats, field) != 0;
    }
  });
  return any;
}

void AddFigures(const wire::NodeStats& part, wire::NodeStats& total) {
  const pb::Reflection* reflection = total.GetReflection();
  ForEachFigure(part, [&](const pb::FieldDescriptor* field) {
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64) {
      reflection->SetUInt64(
          &total, field, reflection->GetUInt64(total, field) + reflection->GetUInt64(part, field));
    } else {
      reflection->SetDouble(
          &total, field, reflection->GetDouble(total, field) + reflection->GetDouble(part, field));
    }
  });
}

}  // namespace lmdx::dsm
