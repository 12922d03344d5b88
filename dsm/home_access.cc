#include "dsm/home_access.h"

#include "base/error.h"
#include "base/log.h"
#include "dsm/dsm.pb.h"
#include "dsm/internal/message_types.h"

namespace lmdx::dsm {

using internal::kDsmAccessKey;

HomeAccess::HomeAccess(net::Node& node, const GlobalSpace& space, bool enabled)
    : node_(node),
      space_(space),
      enabled_(enabled),
      windows_(static_cast<std::size_t>(node.size())) {}

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
  try {
    net::InboundMessage reply = node_.Request(home, kDsmAccessKey, {});
    wire::AccessWindow answer;
    if (answer.ParseFromString(reply.body) && answer.bytes() <= space_.bytes()) {
      window.key = answer.key();
      window.base = answer.base();
      window.bytes = answer.bytes();
    } else {
      LogLine("a malformed read window from rank " + std::to_string(home) +
              ": its pages are fetched by messages");
    }
  } catch (const Error&) {
    // The home is lost or ending: the fetch by message that follows reports it as it should.
    return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  windows_[static_cast<std::size_t>(home)] = window;
  return window;
}

bool HomeAccess::Read(int home, std::span<const consistency::PageId> pages, std::byte* into) {
  if (!enabled_ || pages.empty()) return false;
  std::optional<Window> window = WindowOf(home);
  if (!window || window->key.empty()) return false;
  const std::uint64_t page_bytes = space_.page_bytes();
  // One read per run of consecutive pages: they are consecutive in the home's memory too.
  std::vector<net::Node::RemoteSpan> spans;
  std::size_t at = 0;
  while (at < pages.size()) {
    std::size_t end = at + 1;
    while (end < pages.size() && pages[end] == pages[end - 1] + 1) ++end;
    if ((pages[end - 1] + 1) * page_bytes > window->bytes) return false;
    spans.push_back({window->base + pages[at] * page_bytes, into + at * page_bytes,
                     static_cast<std::size_t>((end - at) * page_bytes)});
    at = end;
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
  if (node_.WriteRemote(home, window->key, pieces)) return true;
  GiveUp(home);
  return false;
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

}  // namespace lmdx::dsm
