// Sequential consistency (protocol "sc"): single writer, multiple readers, invalidation, after Li
// and Hudak's Ivy with a fixed distributed manager. Each page's home keeps its directory (owner
// and copyset) and serves one transaction per page at a time; the faulting node drives the
// transaction itself: it asks the home, fetches the contents from the owner when the home has
// none, invalidates the other copies in parallel, opens the page and tells the home it is done.
// Correct for every program, racy or not; the baseline the other protocols are measured against.
// docs/dsm.md walks through the messages.
#ifndef LMDX_CONSISTENCY_SC_PROTOCOL_H_
#define LMDX_CONSISTENCY_SC_PROTOCOL_H_

#include <memory>

#include "consistency/counters.h"
#include "consistency/internal/sc_directory.h"
#include "consistency/page_table.h"
#include "consistency/protocol.h"

namespace lmdx::consistency {

class ScProtocol final : public Protocol {
 public:
  ScProtocol(net::Node& node, PageMemory& memory, PageTable& table, Counters& counters);

  const char* name() const override { return "sc"; }
  void RegisterHandlers(net::Node& node) override;
  Access CurrentAccess(PageId page) const override { return table_.access(page); }
  void Obtain(PageId page, Access wanted) override;
  void WithPage(PageId page, Access access, const std::function<void(std::byte*)>& use) override;
  void OpenFreshPages(PageId first, std::uint64_t count) override;

  // Sequential consistency needs nothing at acquire and release: every access is coherent.
  std::string OnRelease(const sync::SyncObject&) override { return {}; }
  void OnAcquire(const sync::SyncObject&, std::span<const std::string>) override {}

 private:
  void Transact(PageId page, Access wanted);
  // The requester's part of a granted transaction: fetch, invalidate, install.
  void Complete(PageId page, Access before, const internal::ScGrantDecision& grant);
  internal::ScGrantDecision AcquireAtHome(PageId page, Access wanted, bool first_touch);
  // Asks the home for the page; from the answer on, the home's entry is locked for this node.
  net::InboundMessage RequestGrant(int home, PageId page, Access wanted, bool first_touch);
  // The grant an answer carries (the page too, when included); throws on a malformed answer.
  internal::ScGrantDecision GrantOf(const net::InboundMessage& reply, int home, PageId page,
                                    Access wanted);
  void FetchFrom(int source, PageId page, bool invalidate);
  void InvalidateCopies(PageId page, const std::vector<int>& nodes);
  void Install(PageId page, Access access);
  void ReleaseAtHome(PageId page);
  // Lowers this node's access to page to at most `limit` (a copy handed to or taken by another).
  void LowerAccess(PageId page, Access limit);
  // Answers a remote request the directory granted; applies the home's own change first.
  void Answer(const net::ReplyTo& to, PageId page, const internal::ScGrantDecision& grant);
  net::Payload PagePayload(PageId page);

  net::Node& node_;
  PageMemory& memory_;
  Counters& counters_;
  PageTable& table_;
  internal::ScDirectory directory_;
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_SC_PROTOCOL_H_
