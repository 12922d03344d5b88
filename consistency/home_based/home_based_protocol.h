// The home-based multiple-writer protocols: write-update ("update", Munin's write-shared), eager
// release consistency ("rc") and home-based lazy release consistency ("hlrc", Zhou, Iftode and
// Li). They share everything but what a release tells the other copies:
//
// - Every page has a home whose copy is the master. Another node fetches the whole page from the
//   home on a read fault; its first write in an interval takes a twin (a local fault, no message);
//   at a release its diffs go to their homes, one message per home, and the release waits until
//   every home has applied them.
// - The home writes its own pages in place with no twin. A page no other node has ever fetched is
//   written with no fault at all; once shared, the home's first write in an interval faults once
//   (locally) so that the release knows the page changed.
// - update: the home answers a writer with the page's other copy holders, and the writer sends
//   them its diffs, which they apply to their copies: a copy never goes stale, so readers never
//   fault again (the home keeps a twin of a shared page it writes, to have a diff to send).
// - rc: the same, but the other copies are invalidated instead.
// - hlrc: nothing is sent at the release beyond the diffs to the homes; the release's write
//   notices travel with the synchronisation (lock grant, semaphore unit, barrier departure) and
//   the acquirer invalidates the pages they name. Pages it was using are fetched again at once,
//   one message per home, while their homes wait at the same synchronisation anyway.
// - lrc (lazy release consistency, TreadMarks): as hlrc, but a release keeps its diffs, numbered
//   by interval, and sends nothing; a fault fetches the page from its home (the copy a garbage
//   collection last brought up to date, with the intervals it holds) and the missing diffs from
//   their writers, and applies them in the order of their intervals. A home brings its own pages
//   up to date at the acquire that names them. When a node's diffs pass a limit, the next barrier
//   every node passes has every home gather its pages' diffs, and the barrier after discards them.
//
// Several threads of a node share its copy: a release by any of them sends the node's writes so
// far; a page invalidated while this node holds unsent writes to it keeps them as a diff, sent at
// the next release and applied over any copy fetched before then. docs/protocols.md has the rules.
#ifndef LMDX_CONSISTENCY_HOME_BASED_HOME_BASED_PROTOCOL_H_
#define LMDX_CONSISTENCY_HOME_BASED_HOME_BASED_PROTOCOL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "consistency/counters.h"
#include "consistency/diff.h"
#include "consistency/home_based/internal/fault_streams.h"
#include "consistency/home_based/internal/first_touch_homes.h"
#include "consistency/home_based/internal/home_directory.h"
#include "consistency/page_table.h"
#include "consistency/protocol.h"
#include "consistency/write_notices.h"

namespace lmdx::consistency {

enum class HomeBasedKind { kUpdate, kRc, kHlrc, kLrc };

class HomeBasedProtocol final : public Protocol {
 public:
  struct Settings {
    // hlrc, lrc: refetch at the acquire the pages it invalidated that this node was using.
    bool refetch_at_acquire = true;
    // A fault on a strided walk brings the pages ahead of it (internal/fault_streams.h).
    bool fetch_ahead = true;
    // lrc: the bytes of diffs a node keeps before it asks for a garbage collection.
    std::uint64_t lrc_diff_limit = 64 << 20;
  };
  // Message types [type_base, type_base + 4) are this protocol's.
  HomeBasedProtocol(HomeBasedKind kind, int type_base, net::Node& node, PageMemory& memory,
                    PageTable& table, Counters& counters, Settings settings);

  const char* name() const override;
  void RegisterHandlers(net::Node& node) override;
  Access CurrentAccess(PageId page) const override { return table_.access(page); }
  void Obtain(PageId page, Access wanted) override;
  void WithPage(PageId page, Access access, const std::function<void(std::byte*)>& use) override;
  void OpenFreshPages(PageId first, std::uint64_t count) override;
  std::string OnRelease(const sync::SyncObject& object) override;
  void OnAcquire(const sync::SyncObject& object, std::span<const std::string> payloads) override;
  std::optional<std::string> MergePayloads(std::span<const std::string> payloads) override;
  // hlrc and lrc: a lock grant leaves out the notices its acquirer already has.
  std::string Knowledge() override;
  std::string Trim(std::string payload, const std::string& knowledge) override;
  // A grant passed on untaken gets this node's whole log back (sync/consistency_hooks.h says why).
  std::string Untrim(std::string payload) override;

 private:
  // This node's state of a page beyond its access (guarded by state_mutex_; a page's entry is
  // changed only under its stripe lock too, so that a transition sees it whole).
  // Answers an update or an invalidation when the last page it found held has taken it in:
  // the writer's release completes only then, so no thread of this node that acquires after it
  // can see the page as it was before.
  class DeferredAck {
   public:
    DeferredAck(net::Node& node, const net::ReplyTo& to) : node_(node), to_(to) {}
    DeferredAck(const DeferredAck&) = delete;
    DeferredAck& operator=(const DeferredAck&) = delete;
    ~DeferredAck();

   private:
    net::Node& node_;
    net::ReplyTo to_;
  };
  // One of this node's diffs of a page on its way to the page's home. batch is the number of the
  // kDiffs message to that home that carries it, 0 until a release takes it: a fetch answered
  // by a home that had applied fewer batches of this node's applies it over the copy.
  struct OwnDiff {
    std::uint64_t batch = 0;  // guarded by state_mutex_
    Diff bytes;
  };
  using OwnDiffs = std::vector<std::shared_ptr<OwnDiff>>;
  struct CopyState {
    std::unique_ptr<std::byte[]> twin;  // the page before this interval's first write
    OwnDiffs saved;             // this node's writes not yet sent (the page was invalidated)
    std::vector<Diff> pending;  // updates that came while a transition held the page
    std::vector<std::shared_ptr<DeferredAck>> acks;  // answered when the transition ends
    bool stale = false;                              // invalidated while a transition held the page
    int quiet_releases = 0;  // releases since the kept-writable page last changed
  };
  static constexpr int kQuietReleasesKept = 2;
  // lrc: a fetched copy that lacked at least this many diffs is described to its home.
  static constexpr std::size_t kHomeUpdateDiffs = 4;
  using Batches = std::map<int, std::vector<PageId>>;  // destination -> pages

  // ---- faults and fetches (home_based_protocol.cc)
  void OpenAtHome(PageId page, Access wanted);
  // Marks busy and returns the pages a read fault on page fetches: its coherence unit's.
  std::vector<PageId> UnitToFetch(PageId page, const Placement& placement, int home);
  // Marks busy and adds to by_home the pages of a strided walk ahead of page, once the fault
  // shows one (internal/fault_streams.h): pages of its region this node lacks, homed elsewhere.
  // Returns them.
  std::vector<PageId> AddStreamAhead(PageId page, const Placement& placement, Batches& by_home);
  void StartWriting(PageId page);
  // StartWriting for each of pages (not homed here) still readable and not held, in one
  // protection change per run; returns how many it opened.
  std::size_t StartWritingAll(const std::vector<PageId>& pages);
  // After an upgrade fault on page (not homed here): the readable pages ahead of a walk that
  // writes (internal/fault_streams.h) open for writing too.
  void UpgradeAhead(PageId page, const Placement& placement);
  // Fetches pages (all busy, owned by the caller) from their homes, one request per home in
  // parallel, and installs them readable; a page invalidated meanwhile is left without access.
  void FetchAndInstall(const Batches& by_home);
  // Ends a transition the caller owned: applies what came meanwhile (updates, or an
  // invalidation), sets the access and wakes the waiters. Caller holds the stripe lock.
  void EndTransition(PageId page, Access access);
  void ApplyToCopy(PageId page, std::span<const std::uint8_t> diff);

  // ---- release (release.cc)
  struct Flushed {
    std::vector<PageId> written;  // pages whose writes the release made visible
  };
  Flushed Flush();  // caller holds flush_mutex_
  using DiffBatches = std::map<int, std::vector<std::pair<PageId, std::shared_ptr<OwnDiff>>>>;
  // Sends one kDiffs or kUpdate per destination and waits for every answer; returns the answers'
  // bodies by destination. kDiffs batches are numbered (OwnDiff::batch) per home first.
  std::map<int, std::string> SendDiffs(int type_offset, const DiffBatches& batches);
  // hlrc: writes a batch straight into its home's copies (one-sided); false when the pair cannot,
  // and the batch goes as a message. A fetch that meets the batch in flight may apply it again
  // over a copy that has it: the same bytes, which no node may have overwritten before this
  // release completes.
  bool WriteDiffsAtHome(int home,
                        const std::vector<std::pair<PageId, std::shared_ptr<OwnDiff>>>& diffs);
  void SendInvalidations(const Batches& batches);

  // ---- acquire and invalidation (acquire.cc)
  // Takes away this node's access to pages (keeping its unsent writes as diffs); returns those
  // that a fault brought here lately, which are worth fetching again at once.
  // A page held by a transition is marked and, when given, ack is answered once it is dropped;
  // with wait_for_holders (an application thread's acquire) the call waits for the holder instead.
  std::vector<PageId> Invalidate(const std::vector<PageId>& pages,
                                 const std::shared_ptr<DeferredAck>& ack, bool wait_for_holders);
  // Fetches again, in one message per home, the pages an acquire invalidated that were in use.
  void Refetch(const std::vector<PageId>& pages);
  // hlrc at a home: takes write access and the twin from pages of its own that other nodes wrote
  // (their diffs may have landed in its memory one-sided, past the twin); each counts as written
  // by this node (home_rewritten_). Flush's rule for held home pages covers the same case; this
  // keeps the page out of the home's hands until it writes again.
  void DropHomeTwins(const std::vector<PageId>& pages);

  // ---- lrc (lazy.cc)
  // A diff this node made, kept until a garbage collection; interval 0 until its release closes.
  struct KeptDiff {
    std::uint64_t interval = 0;
    Diff bytes;
  };
  using Version = std::map<int, std::uint64_t>;  // writer -> newest interval of its diffs held
  // One diff to apply over a copy, in interval order (this node's unnumbered ones last).
  struct DiffToApply {
    std::uint64_t interval;
    int writer;
    std::vector<std::uint8_t> bytes;
  };
  void KeepDiff(PageId page, Diff diff);         // caller holds state_mutex_
  void NumberKeptDiffs(std::uint64_t interval);  // the release's interval
  // The diffs a copy of each page holding `versions` lacks: other writers' (fetched from them,
  // one request per writer and more when an answer stops at its bound), then this node's own.
  // Empty optional: a writer discarded some of them, and the page must be fetched again. With
  // covered, also what each copy holds once they are applied (this node's unnumbered diffs
  // aside).
  std::optional<std::map<PageId, std::vector<DiffToApply>>> MissingDiffs(
      const std::map<PageId, Version>& versions, std::map<PageId, Version>* covered = nullptr);
  // lrc: tells the homes of pages just fetched, whose copies lacked many diffs, what the copy
  // holds now (one merged diff per page), so that the next fetch gathers few.
  void UpdateHomes(const std::map<PageId, std::vector<std::byte>>& served,
                   const std::map<PageId, Version>& served_versions,
                   const std::map<PageId, std::vector<DiffToApply>>& applied,
                   const std::map<PageId, Version>& covered);
  void ServeHomeUpdate(net::InboundMessage& message);
  void AppendOwnDiffs(PageId page, const Version& version, std::vector<DiffToApply>& out);
  // lrc at a home: applies to its own copies of pages (held by the caller) what they lack.
  void BringHomePagesUpToDate(const std::vector<PageId>& pages);
  bool HomeCopyLacksDiffs(PageId page);
  void LearnRequired(const WriteNoticeLog::Received& received);
  // At a barrier every node passed: discards what the previous collection gathered, and with
  // asked (some node holds too many diffs) gathers this node's home pages' diffs.
  void CollectGarbageAtBarrier(const sync::SyncObject& barrier,
                               std::span<const std::string> payloads, bool asked);
  void ServeLazyDiffs(net::InboundMessage& message, const net::ReplyTo& to);

  // ---- serving other nodes (serving.cc)
  void ServeFetch(net::InboundMessage& message, const net::ReplyTo& to);
  void ServeDiffs(net::InboundMessage& message, const net::ReplyTo& to);
  void ServeUpdate(net::InboundMessage& message, const net::ReplyTo& to);
  // update, at the home: stops writing a page it serves a copy of (caller holds the stripe lock).
  void HandOverWritable(PageId page);
  // hlrc, at the start of a release and of a fetch served: the first copies other nodes read
  // from this node's memory (PageMemory::TakeRegisteredCopies) join the directory. A page among
  // them that this node wrote with no fault (no other copy was known) goes read-only, and it or a
  // page that a first-copy fetch made read-only since the last taking may have changed after the
  // copy was read: it counts as written at the next release (home_rewritten_). Not at_release
  // (the progress thread), a page in a transition is left to the next release.
  void TakeRegisteredCopies(bool at_release);

  net::MessageType Type(int offset) const;
  // The page's home; in a first-touch region asks the page's manager the first time, which makes
  // this node the home when no node has touched the page (application threads only).
  int HomeOf(PageId page);
  int HomeOf(PageId page, const Placement& placement);
  // The home when this node knows it without asking anyone; -1 otherwise.
  int KnownHomeOf(PageId page);
  void ProtectPages(const std::vector<PageId>& sorted_pages, Access access);

  HomeBasedKind kind_;
  int type_base_;
  net::Node& node_;
  PageMemory& memory_;
  PageTable& table_;
  Counters& counters_;
  Settings settings_;
  internal::HomeDirectory directory_;
  internal::FirstTouchHomes first_touch_homes_;
  internal::FaultStreams streams_;
  WriteNoticeLog notices_;

  std::mutex state_mutex_;
  std::unordered_map<PageId, CopyState> states_;
  std::vector<PageId> dirty_;  // written since the last flush (a twin taken, or a home write)
  // hlrc: home pages whose twin an acquire dropped (DropHomeTwins): the next release closes a
  // notice for each, as for a page it diffed.
  std::vector<PageId> home_rewritten_;  // guarded by state_mutex_
  // hlrc: home pages a first-copy fetch made read-only (ServeFetch) since the registry was last
  // taken: a copy registered meanwhile may lack writes made before that (TakeRegisteredCopies).
  std::unordered_set<PageId> served_first_;  // guarded by state_mutex_
  // hlrc: copies registered while their page was in a transition, for the next release to take.
  std::vector<std::pair<int, PageId>> registered_while_held_;  // guarded by state_mutex_
  // update: the home's writes to pages it served while writing them (HandOverWritable), for the
  // copies held before; sent first at the next release.
  std::vector<std::pair<PageId, std::shared_ptr<OwnDiff>>>
      home_pending_;  // guarded by state_mutex_
  // The diffs of the release under way, until their homes have answered: a fetch meanwhile may
  // be answered by a home that lacks them, and applies those its home had not applied.
  std::map<PageId, OwnDiffs> in_flight_;        // guarded by state_mutex_
  std::vector<std::uint64_t> batches_sent_;     // per home, kDiffs batches numbered so far
  std::vector<std::uint64_t> batches_applied_;  // per writer, at this home (progress thread)
  // Pages whose home has served this node a copy, and so counts it among the page's copies for
  // good (internal/home_directory.h): their next fetches may read the home's memory directly.
  std::unordered_set<PageId> known_copies_;  // guarded by state_mutex_
  // lrc, guarded by state_mutex_.
  std::unordered_map<PageId, std::vector<KeptDiff>> kept_diffs_;  // this node's, by page
  std::uint64_t kept_diff_bytes_ = 0;
  std::vector<PageId> unnumbered_;  // pages with kept diffs whose release has not closed
  std::unordered_map<PageId, std::uint64_t> discarded_upto_;  // this node's diffs gone, by page
  std::unordered_map<PageId, Version> required_;      // newest interval heard of, other writers
  std::unordered_map<PageId, Version> home_version_;  // at the home: what its copy holds
  // Garbage collection, under acquire_mutex_: the barrier round whose departure gathered the
  // diffs at the homes, and the newest interval of this node's then gathered. Every thread that
  // passes a later round of that barrier passed that round first, its gathering included.
  struct Gathered {
    std::string barrier;
    std::uint64_t round;
    std::uint64_t upto;
  };
  std::optional<Gathered> gathered_;
  std::map<std::string, std::uint64_t, std::less<>> collected_round_;  // per barrier, handled
  std::mutex flush_mutex_;  // one release of this node at a time
  // Held while fresh pages are open for writing but still held by their opening: a fetch served
  // then could copy a page before a sibling thread's write that no twin or notice would record,
  // so fetches wait for it (OpenFreshPages is a few protection changes, never a message).
  std::mutex opening_mutex_;
  std::chrono::milliseconds open_pause_;  // LMDX_DSM_FAULTS, for tests (internal/open_pause.h)
  // One acquire of this node at a time: a thread whose acquire brings notices another thread of
  // the node has just taken must not go on before that thread has dropped the pages they name.
  std::mutex acquire_mutex_;
  // Pages a fault brought, and how many more acquires may refetch them unasked: a page that was
  // refetched is not known to be read again (a read of a readable page leaves no trace), so the
  // refetching stops after a few rounds until a fault shows the page is in use once more.
  std::unordered_map<PageId, std::uint8_t> refetch_credit_;  // guarded by state_mutex_
  static constexpr std::uint8_t kRefetchCredit = 4;
};

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_HOME_BASED_HOME_BASED_PROTOCOL_H_
