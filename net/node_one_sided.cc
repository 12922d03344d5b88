// The node's one-sided access: memory exposed to a peer's network, and reads and writes of a
// peer's memory over the pair's own network (net/transport.h).
#include <atomic>
#include <memory>

#include "net/node.h"

namespace lmdx::net {

namespace {

// The reads of one ReadRemote call: the last to finish wakes the caller.
struct ReadBatch {
  std::atomic<std::size_t> remaining{0};
  std::atomic<bool> failed{false};
  Completion done;

  void Finish(bool ok) {
    if (!ok) failed.store(true, std::memory_order_relaxed);
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) done.Signal();
  }
};

}  // namespace

std::optional<std::string> Node::Expose(int peer, void* base, std::size_t size) {
  Transport* transport = OneSidedRoute(peer);
  if (transport == nullptr) return std::nullopt;
  std::lock_guard lock(exposed_mutex_);
  auto [entry, fresh] = exposed_.try_emplace({transport, base, size});
  // Registered once per network: every peer on it reads with the same key.
  if (fresh) entry->second = transport->Expose(base, size);
  return entry->second;
}

Transport* Node::OneSidedRoute(int peer) const {
  if (peer == info_.rank || peer < 0 || peer >= info_.size ||
      !routes_ready_.load(std::memory_order_acquire)) {
    return nullptr;
  }
  return route_[static_cast<std::size_t>(peer)];
}

bool Node::ReadRemote(int peer, const std::string& key, std::span<const RemoteSpan> spans) {
  Transport* transport = OneSidedRoute(peer);
  if (transport == nullptr) return false;
  if (spans.empty()) return true;
  // Shared with the callbacks, which may run after a failed start below returned.
  auto batch = std::make_shared<ReadBatch>();
  // One count for the loop itself, so that no read finishing early signals before all started.
  batch->remaining.store(spans.size() + 1, std::memory_order_relaxed);
  for (const RemoteSpan& span : spans) {
    const bool started = transport->Read(peer, span.address, key, span.local, span.size,
                                         [batch](bool ok) { batch->Finish(ok); });
    if (!started) batch->Finish(false);
  }
  batch->Finish(true);
  const WaitReason reason{"a one-sided read of memory", {}, peer};
  batch->done.Wait(&reason);
  return !batch->failed.load(std::memory_order_relaxed);
}

std::optional<bool> Node::WriteRemote(int peer, const std::string& key,
                                      std::span<const Transport::WritePiece> pieces) {
  Transport* transport = OneSidedRoute(peer);
  if (transport == nullptr) return std::nullopt;
  if (pieces.empty()) return true;
  return transport->Write(peer, key, pieces);
}

Mapping Node::MapRemote(int peer, const std::string& key, int file, std::size_t size) {
  Transport* transport = OneSidedRoute(peer);
  if (transport == nullptr) return {};
  return transport->Map(peer, key, file, size);
}

}  // namespace lmdx::net
