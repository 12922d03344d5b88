#include "consistency/protocol_set.h"

#include "base/error.h"
#include "base/log.h"
#include "consistency/home_based/internal/message_types.h"
#include "consistency/internal/counted_memory.h"
#include "consistency/sc_protocol.h"
#include "consistency/write_notices.pb.h"

namespace lmdx::consistency {
namespace {

// sc's types are kFirstDsm + [0, 4); each home-based protocol takes the next
// kTypesPerProtocol after 10 (the DSM's own start at kFirstDsm + 100).
int HomeBasedTypeBase(HomeBasedKind kind) {
  return static_cast<int>(net::MessageType::kFirstDsm) + 10 +
         static_cast<int>(kind) * internal::kTypesPerProtocol;
}

}  // namespace

struct ProtocolSet::Member {
  explicit Member(PageMemory& memory) : memory(memory, counters) {}
  Counters counters;
  internal::CountedMemory memory;
  std::unique_ptr<Protocol> protocol;  // declared last: destroyed before what it refers to
};

ProtocolSet::ProtocolSet(net::Node& node, PageMemory& memory, PageTable& table, Settings settings)
    : alone_(node.size() == 1) {
  auto add = [&](auto make) {
    auto member = std::make_unique<Member>(memory);
    member->protocol = make(member->memory, member->counters);
    members_.push_back(std::move(member));
  };
  add([&](PageMemory& counted, Counters& counters) -> std::unique_ptr<Protocol> {
    return std::make_unique<ScProtocol>(node, counted, table, counters);
  });
  for (HomeBasedKind kind :
       {HomeBasedKind::kUpdate, HomeBasedKind::kRc, HomeBasedKind::kHlrc, HomeBasedKind::kLrc}) {
    add([&](PageMemory& counted, Counters& counters) -> std::unique_ptr<Protocol> {
      return std::make_unique<HomeBasedProtocol>(kind, HomeBasedTypeBase(kind), node, counted,
                                                 table, counters, settings.home_based);
    });
  }
}

ProtocolSet::~ProtocolSet() = default;

std::vector<Protocol*> ProtocolSet::All() const {
  std::vector<Protocol*> all;
  all.reserve(members_.size());
  for (const auto& member : members_) all.push_back(member->protocol.get());
  return all;
}

Counters& ProtocolSet::CountersOf(const Protocol& protocol) const {
  for (const auto& member : members_) {
    if (member->protocol.get() == &protocol) return member->counters;
  }
  throw Error(LMDX_ERR_INTERNAL, std::string("protocol ") + protocol.name() + " is not in the set");
}

std::vector<std::string_view> ProtocolSet::Names() { return {"sc", "update", "rc", "lrc", "hlrc"}; }

Protocol* ProtocolSet::Find(std::string_view name) const {
  for (const auto& member : members_) {
    if (name == member->protocol->name()) return member->protocol.get();
  }
  return nullptr;
}

void ProtocolSet::RegisterHandlers(net::Node& node) {
  for (const auto& member : members_) member->protocol->RegisterHandlers(node);
}

std::string ProtocolSet::Gather(const std::function<std::string(Protocol&)>& bytes_of) const {
  wire::HookPayloads gathered;
  for (const auto& member : members_) {
    std::string data = bytes_of(*member->protocol);
    if (data.empty()) continue;
    auto* entry = gathered.add_entries();
    entry->set_protocol(member->protocol->name());
    entry->set_data(std::move(data));
  }
  return gathered.SerializeAsString();  // empty when no protocol had anything
}

std::string ProtocolSet::OnRelease(const sync::SyncObject& object) {
  if (alone_) return {};
  return Gather([&object](Protocol& protocol) { return protocol.OnRelease(object); });
}

std::vector<std::vector<std::string>> ProtocolSet::Split(std::span<const std::string> payloads,
                                                         const std::string& where) const {
  std::vector<std::vector<std::string>> by_protocol(members_.size());
  for (const std::string& payload : payloads) {
    wire::HookPayloads parsed;
    if (!parsed.ParseFromString(payload)) {
      throw Error(LMDX_ERR_INTERNAL, "a malformed consistency payload with " + where);
    }
    for (auto& entry : *parsed.mutable_entries()) {
      for (std::size_t i = 0; i < members_.size(); ++i) {
        if (entry.protocol() == members_[i]->protocol->name()) {
          by_protocol[i].push_back(std::move(*entry.mutable_data()));
        }
      }
    }
  }
  return by_protocol;
}

void ProtocolSet::OnAcquire(const sync::SyncObject& object, std::span<const std::string> payloads) {
  if (alone_) return;
  auto by_protocol = Split(
      payloads, std::string(sync::KindName(object.kind)) + " \"" + std::string(object.name) + "\"");
  for (std::size_t i = 0; i < members_.size(); ++i) {
    members_[i]->protocol->OnAcquire(object, by_protocol[i]);
  }
}

std::string ProtocolSet::Knowledge() {
  if (alone_) return {};
  return Gather([](Protocol& protocol) { return protocol.Knowledge(); });
}

std::string ProtocolSet::Trim(std::string payload, const std::string& knowledge) {
  if (payload.empty() || knowledge.empty()) return payload;
  wire::HookPayloads parsed;
  wire::HookPayloads known;
  try {
    if (!parsed.ParseFromString(payload) || !known.ParseFromString(knowledge)) {
      throw Error(LMDX_ERR_INTERNAL, "a malformed consistency payload or summary");
    }
    for (auto& entry : *parsed.mutable_entries()) {
      for (const auto& summary : known.entries()) {
        if (summary.protocol() != entry.protocol()) continue;
        if (Protocol* protocol = Find(entry.protocol())) {
          entry.set_data(protocol->Trim(std::move(*entry.mutable_data()), summary.data()));
        }
      }
    }
  } catch (const Error& error) {
    // payload itself was only parsed, never moved from: it goes whole.
    LogLine(std::string("a lock's payload was sent whole: ") + error.what());
    return payload;
  }
  return parsed.SerializeAsString();
}

// Each protocol puts back into its own entry what its Trim left out; a protocol with no entry had
// nothing cut (Trim never removes an entry).
std::string ProtocolSet::Untrim(std::string payload) {
  if (payload.empty()) return payload;
  wire::HookPayloads parsed;
  try {
    if (!parsed.ParseFromString(payload)) {
      throw Error(LMDX_ERR_INTERNAL, "a malformed consistency payload");
    }
    for (auto& entry : *parsed.mutable_entries()) {
      if (Protocol* protocol = Find(entry.protocol())) {
        entry.set_data(protocol->Untrim(std::move(*entry.mutable_data())));
      }
    }
  } catch (const Error& error) {
    // payload itself was only parsed, never moved from: it goes as it came.
    LogLine(std::string("a lock's payload was passed on as it came: ") + error.what());
    return payload;
  }
  return parsed.SerializeAsString();
}

std::optional<std::string> ProtocolSet::Merge(std::span<const std::string> payloads) {
  auto by_protocol = Split(payloads, "a barrier's arrivals");
  wire::HookPayloads merged;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (by_protocol[i].empty()) continue;
    std::optional<std::string> one = members_[i]->protocol->MergePayloads(by_protocol[i]);
    if (!one) return std::nullopt;
    if (one->empty()) continue;
    auto* entry = merged.add_entries();
    entry->set_protocol(members_[i]->protocol->name());
    entry->set_data(std::move(*one));
  }
  return merged.SerializeAsString();
}

}  // namespace lmdx::consistency
