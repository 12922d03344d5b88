#include "dsm/home_access.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "dsm/dsm.pb.h"
#include "dsm/internal/message_types.h"

namespace lmdx::dsm {

using internal::kDsmAccessKey;

namespace {

// Calls run(at, end) for each run pages[at], ..., pages[end - 1] of consecutive pages: they are
// consecutive in the home's memory too, and each run is one copy or one system call's piece.
template <typename Run>
void ForEachRun(std::span<const consistency::PageId> pages, Run run) {
  for (std::size_t at = 0; at < pages.size();) {
    std::size_t end = at + 1;
    while (end < pages.size() && pages[end] == pages[end - 1] + 1) ++end;
    run(at, end);
    at = end;
  }
}

}  // namespace

HomeAccess::HomeAccess(net::Node& node, const GlobalSpace& space, bool enabled)
    : node_(node),
      space_(space),
      enabled_(enabled),
      registry_(node.size(), space.page_count()),
      windows_(static_cast<std::size_t>(node.size())),
      views_(static_cast<std::size_t>(node.size())),
      rings_(static_cast<std::size_t>(node.size())) {}

void HomeAccess::RegisterHandlers() {
  net::SetMessageTypeName(kDsmAccessKey, "dsm-access-key");
  // Answered whatever this node's own setting: the asker decides how it reads.
  node_.Handle(kDsmAccessKey, [this](net::InboundMessage& message, const net::ReplyTo* to) {
    if (to == nullptr) return;
    wire::AccessWindow window;
    try {
      std::optional<std::string> key = node_.Expose(message.header.source, space_.SystemView(0),
                                                    static_cast<std::size_t>(space_.bytes()));
      if (key) {
        window.set_key(*key);
        window.set_base(reinterpret_cast<std::uintptr_t>(space_.SystemView(0)));
        window.set_bytes(space_.bytes());
        window.set_view_file(space_.memory_file());
        window.set_registry_file(registry_.file());
        if (std::optional<std::string> registry_key =
                node_.Expose(message.header.source, registry_.base(), registry_.bytes())) {
          window.set_registry_key(*registry_key);
          window.set_registry_base(reinterpret_cast<std::uintptr_t>(registry_.base()));
          window.set_registry_bytes(registry_.bytes());
        }
      }
    } catch (const Error& error) {
      // Said once: the node remembers the network's refusal and answers with no key from now on.
      LogLine(std::string("pages homed here are served by messages only: ") + error.what());
    }
    node_.Reply(*to, window.SerializeAsString());
  });
}

std::optional<HomeAccess::Window> HomeAccess::WindowOf(int home) {
  if (home < 0 || home >= node_.size() || home == node_.rank()) return std::nullopt;
  {
    std::lock_guard lock(mutex_);
    const Window& known = windows_[static_cast<std::size_t>(home)];
    if (known.asked) return known;
  }
  // Two threads may both ask; the home answers both alike.
  Window window;
  window.asked = true;
  // The home's descriptors of its memory files, to map (-1: none).
  int view_file = -1;
  int registry_file = -1;
  try {
    net::InboundMessage reply = node_.Request(home, kDsmAccessKey, {});
    wire::AccessWindow answer;
    if (answer.ParseFromString(reply.body) && answer.bytes() <= space_.bytes()) {
      window.key = answer.key();
      window.base = answer.base();
      window.bytes = answer.bytes();
      // A registry of another shape (a different LMDX) is not written to.
      if (answer.registry_bytes() ==
          static_cast<std::uint64_t>(node_.size()) * sizeof(internal::CopyRegistry::Slot)) {
        window.registry_key = answer.registry_key();
        window.registry_base = answer.registry_base();
        registry_file = answer.has_registry_file() ? answer.registry_file() : -1;
      }
      view_file = answer.has_view_file() ? answer.view_file() : -1;
    } else {
      LogLine("a malformed read window from rank " + std::to_string(home) +
              ": its pages are fetched by messages");
    }
  } catch (const Error&) {
    // The home is lost or ending: the fetch by message that follows reports it as it should.
    return std::nullopt;
  }
  // A peer of the same host maps the home's memory files: no system call per access then.
  Mapping view;
  Mapping ring;
  if (!window.key.empty() && view_file >= 0) {
    view = node_.MapRemote(home, window.key, view_file, window.bytes);
  }
  if (view.data() != nullptr && !window.registry_key.empty() && registry_file >= 0) {
    ring = node_.MapRemote(
        home, window.registry_key, registry_file,
        static_cast<std::size_t>(node_.size()) * sizeof(internal::CopyRegistry::Slot));
  }
  std::lock_guard lock(mutex_);
  Window& known = windows_[static_cast<std::size_t>(home)];
  // The first answer stays: a registration may have been counted against it already.
  if (!known.asked) {
    known = window;
    if (view.data() != nullptr) {
      known.view = view.data();
      views_[static_cast<std::size_t>(home)] = std::move(view);
    }
    if (ring.data() != nullptr && known.view != nullptr) {
      known.ring = reinterpret_cast<internal::CopyRegistry::Slot*>(ring.data()) + node_.rank();
      rings_[static_cast<std::size_t>(home)] = std::move(ring);
    }
  }
  return known;
}

bool HomeAccess::Read(int home, std::span<const consistency::PageId> pages, std::byte* into) {
  if (!enabled_ || pages.empty()) return false;
  std::optional<Window> window = WindowOf(home);
  if (!window || window->key.empty()) return false;
  const std::uint64_t page_bytes = space_.page_bytes();
  std::vector<net::Node::RemoteSpan> spans;
  bool inside = true;
  ForEachRun(pages, [&](std::size_t at, std::size_t end) {
    inside = inside && (pages[end - 1] + 1) * page_bytes <= window->bytes;
    spans.push_back({window->base + pages[at] * page_bytes, into + at * page_bytes,
                     static_cast<std::size_t>((end - at) * page_bytes)});
  });
  if (!inside) return false;
  if (window->view != nullptr) {
    for (const net::Node::RemoteSpan& span : spans) {
      std::memcpy(span.local, window->view + (span.address - window->base), span.size);
    }
    return true;
  }
  if (node_.ReadRemote(home, window->key, spans)) return true;
  GiveUp(home);
  return false;
}

bool HomeAccess::Write(int home, std::span<const consistency::PageRun> runs) {
  if (!enabled_ || runs.empty()) return false;
  std::optional<Window> window = WindowOf(home);
  if (!window || window->key.empty()) return false;
  const std::uint64_t page_bytes = space_.page_bytes();
  std::vector<net::Transport::WritePiece> pieces;
  pieces.reserve(runs.size());
  for (const consistency::PageRun& run : runs) {
    if (run.offset + run.length > page_bytes || (run.page + 1) * page_bytes > window->bytes) {
      return false;
    }
    pieces.push_back({window->base + run.page * page_bytes + run.offset, run.bytes, run.length});
  }
  if (window->view != nullptr) {
    for (const net::Transport::WritePiece& piece : pieces) {
      std::memcpy(window->view + (piece.address - window->base), piece.from, piece.size);
    }
    return true;
  }
  // The kernel pins the home's pages run by run (about 0.5 µs a run here): many pages of many
  // short runs each, such as every word rewritten with its high bytes unchanged (512 runs a page),
  // cost more written by system calls than applied by the home from one message, whose wake-up
  // (100 to 250 µs while the home computes) is what a few hundred runs cost. A page or two of them
  // still go one-sided: the home need not wake. Through a mapping a run is a copy, and all go.
  std::size_t pages = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i == 0 || runs[i].page != runs[i - 1].page) ++pages;
  }
  if (runs.size() > std::max(kSystemCallRuns, kSystemCallRunsPerPage * pages)) return false;
  if (!window->writable) return false;
  const std::optional<bool> wrote = node_.WriteRemote(home, window->key, pieces);
  if (wrote == true) return true;
  GiveUpWrites(home, wrote.has_value());
  return false;
}

bool HomeAccess::Register(int home, std::span<const consistency::PageId> pages) {
  if (!enabled_ || pages.empty()) return false;
  std::optional<Window> window = WindowOf(home);
  if (!window || window->key.empty() || window->registry_key.empty() || !window->writable) {
    return false;
  }
  std::vector<internal::CopyRegistry::Entry> runs;
  ForEachRun(pages, [&](std::size_t at, std::size_t end) {
    runs.push_back({pages[at], end - at});
  });
  using internal::CopyRegistry;
  const int self = node_.rank();
  std::lock_guard one_at_a_time(register_mutex_);
  if (window->ring != nullptr) return RegisterMapped(*window->ring, runs);
  std::uint64_t registered;
  std::uint64_t taken;
  {
    std::lock_guard lock(mutex_);
    const Window& known = windows_[static_cast<std::size_t>(home)];
    registered = known.registered;
    taken = known.taken;
  }
  if (registered + runs.size() - taken > CopyRegistry::kEntries) {
    // Full as far as this node knows: the home may have taken entries since.
    net::Node::RemoteSpan span{window->registry_base + CopyRegistry::TailOffset(self), &taken,
                               sizeof(taken)};
    if (!node_.ReadRemote(home, window->registry_key, {&span, 1})) return false;
    if (taken > registered || registered + runs.size() - taken > CopyRegistry::kEntries) {
      return false;
    }
  }
  // The entries, then the head that covers them, each write complete before the next starts.
  std::vector<net::Transport::WritePiece> pieces;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    pieces.push_back({window->registry_base + CopyRegistry::EntryOffset(self, registered + i),
                      &runs[i], sizeof(CopyRegistry::Entry)});
  }
  const std::uint64_t head = registered + runs.size();
  const net::Transport::WritePiece head_piece{
      window->registry_base + CopyRegistry::HeadOffset(self), &head, sizeof(head)};
  std::optional<bool> wrote = node_.WriteRemote(home, window->registry_key, pieces);
  if (wrote == true) wrote = node_.WriteRemote(home, window->registry_key, {&head_piece, 1});
  if (wrote != true) {
    // Entries past the head are never taken; the ring stays as it was.
    GiveUpWrites(home, wrote.has_value());
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    Window& known = windows_[static_cast<std::size_t>(home)];
    known.registered = head;
    known.taken = taken;
  }
  // Pairs with the home's fence before it takes the entries (CopyRegistry::Take): the read that
  // follows sees every write the home made before a release that missed this entry.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return true;
}

bool HomeAccess::RegisterMapped(internal::CopyRegistry::Slot& ring,
                                std::span<const internal::CopyRegistry::Entry> runs) {
  using internal::CopyRegistry;
  // Only this node writes its slot's head; the home writes its tail (CopyRegistry::Take).
  const std::uint64_t head = std::atomic_ref(ring.head).load(std::memory_order_relaxed);
  const std::uint64_t taken = std::atomic_ref(ring.tail).load(std::memory_order_acquire);
  if (taken > head || head + runs.size() - taken > CopyRegistry::kEntries) return false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ring.entries[(head + i) % CopyRegistry::kEntries] = runs[i];
  }
  std::atomic_ref(ring.head).store(head + runs.size(), std::memory_order_release);
  // As after a registration by system calls (Register).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return true;
}

void HomeAccess::GiveUp(int home) {
  // The network refused (the kernel's permission, a peer in another namespace, a network with
  // reads but no writes): this pair goes on with messages rather than fail the same way at every
  // fault and release.
  std::lock_guard lock(mutex_);
  Window& known = windows_[static_cast<std::size_t>(home)];
  if (!known.key.empty() && !node_.ending()) {
    LogLine("one-sided access to rank " + std::to_string(home) + " over " + node_.NetworkTo(home) +
            " failed; its pages are reached by messages from now on");
  }
  known.key.clear();
}

void HomeAccess::GiveUpWrites(int home, bool failed) {
  std::lock_guard lock(mutex_);
  Window& known = windows_[static_cast<std::size_t>(home)];
  // A network with no remote writes (fabric's memory is exposed for reads) is no failure.
  if (failed && known.writable && !node_.ending()) {
    LogLine("one-sided writes to rank " + std::to_string(home) + " over " + node_.NetworkTo(home) +
            " failed; they go as messages from now on");
  }
  known.writable = false;
}

}  // namespace lmdx::dsm
