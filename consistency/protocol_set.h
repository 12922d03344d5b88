// Every consistency protocol of a node, one instance each, over one page table (a page belongs
// to one region, so to one protocol, for its whole life) and one set of counters. The DSM asks it
// for the protocol a region names; the sync layer calls it as the node's consistency hooks, and it
// carries every protocol's payload in one, so that programs whose variables run under several
// protocols synchronise them all.
#ifndef LMDX_CONSISTENCY_PROTOCOL_SET_H_
#define LMDX_CONSISTENCY_PROTOCOL_SET_H_

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "consistency/counters.h"
#include "consistency/home_based/home_based_protocol.h"
#include "consistency/page_table.h"
#include "consistency/protocol.h"

namespace lmdx::consistency {

class ProtocolSet final : public sync::ConsistencyHooks {
 public:
  struct Settings {
    HomeBasedProtocol::Settings home_based;
  };
  // Each protocol counts what it does in counters of its own (CountersOf).
  ProtocolSet(net::Node& node, PageMemory& memory, PageTable& table, Settings settings);
  ~ProtocolSet() override;

  // The names a configuration may give, in the order docs/protocols.md describes them.
  static std::vector<std::string_view> Names();
  // The protocol called name, or nullptr when there is none.
  Protocol* Find(std::string_view name) const;
  // Every protocol, in Names() order.
  std::vector<Protocol*> All() const;
  // What protocol did on this node: its own work, and the faults and explicit accesses of the
  // pages it keeps, which the DSM counts here.
  Counters& CountersOf(const Protocol& protocol) const;
  void RegisterHandlers(net::Node& node);

  std::string OnRelease(const sync::SyncObject& object) override;
  void OnAcquire(const sync::SyncObject& object, std::span<const std::string> payloads) override;
  std::optional<std::string> Merge(std::span<const std::string> payloads) override;
  std::string Knowledge() override;
  std::string Trim(std::string payload, const std::string& knowledge) override;
  std::string Untrim(std::string payload) override;

 private:
  // Each payload's entries, by protocol (in members_' order).
  std::vector<std::vector<std::string>> Split(std::span<const std::string> payloads,
                                              const std::string& where) const;
  struct Member;
  // One HookPayloads of what bytes_of gives for each protocol, those that give nothing left out.
  std::string Gather(const std::function<std::string(Protocol&)>& bytes_of) const;
  std::vector<std::unique_ptr<Member>> members_;  // counters and memory view outlive the protocol
  // A job of one node: no other node can hold a copy of a page, so every page is homed here and
  // written in place, no release has anything to tell and no acquire anything to learn. The
  // hooks then do nothing at all, and synchronisation costs what it costs between threads.
  bool alone_;
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_PROTOCOL_SET_H_
