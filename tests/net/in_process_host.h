// What the in-process transport tests share: a host that records what its transport delivers, a
// job secret of their own, and transports in one process as the ranks of a job.
#ifndef LMDX_TESTS_NET_IN_PROCESS_HOST_H_
#define LMDX_TESTS_NET_IN_PROCESS_HOST_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "net/job_secret.h"
#include "net/progress_engine.h"
#include "net/transport.h"
#include "net/wire.pb.h"

namespace lmdx::net {

// Keeps what arrives; payloads land in buffers of their own unless a test posts a receive.
class RecordingHost : public TransportHost {
 public:
  // The next payload that fits lands in buffer, as a posted receive's would (once). The buffer is
  // offered only once the transport has asked after_asks times: a receive posted just after its
  // message's announcement arrived, whatever the threads' timing.
  void PostReceive(std::uint8_t* buffer, std::size_t capacity, int after_asks = 0) {
    std::lock_guard lock(mutex_);
    posted_ = buffer;
    posted_capacity_ = capacity;
    posted_after_asks_ = placements_asked_ + after_asks;
  }
  // Raw frames that find no posted receive may find one later (MayPlaceLater), as a node's do.
  void ReceivesMayComeLater() { may_place_later_ = true; }
  std::uint8_t* PlacePayload(const FrameHeader& header, const std::string&) override {
    std::lock_guard lock(mutex_);
    if (placements_asked_++ < posted_after_asks_) return nullptr;
    if (posted_ == nullptr || header.payload_length > posted_capacity_) return nullptr;
    ++receives_placed_;
    return std::exchange(posted_, nullptr);
  }
  // How many posted buffers a transport took for a payload: its bytes may stream in from then.
  int receives_placed() {
    std::lock_guard lock(mutex_);
    return receives_placed_;
  }
  bool MayPlaceLater(const FrameHeader& header) override {
    return may_place_later_ && header.type == MessageType::kRaw;
  }
  void WakeOnNextReceive() override { ++wakes_asked_; }
  // The times a transport asked to hear of the next receive (it held a message for one).
  int wakes_asked() const { return wakes_asked_.load(); }
  void OnMessage(InboundMessage&& message) override {
    KeepPayload(message);  // a raw frame's payload may lie in a transport's own memory
    std::unique_lock lock(mutex_);
    if (std::exchange(hold_next_, false)) {
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !held_; });
    }
    messages_.push_back(std::move(message));
    changed_.notify_all();
  }
  // The next message's delivery waits, inside the transport's poll, until ReleaseHeld: a test
  // acts while a poll is midway.
  void HoldNextMessage() {
    std::lock_guard lock(mutex_);
    hold_next_ = true;
  }
  // True once a delivery is held (false after 10 s).
  bool WaitUntilHeld() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return held_; });
  }
  void ReleaseHeld() {
    std::lock_guard lock(mutex_);
    held_ = false;
    changed_.notify_all();
  }
  void OnPeerLost(int rank, const std::string& why) override {
    std::lock_guard lock(mutex_);
    lost_ += "rank " + std::to_string(rank) + ": " + why + "\n";
  }
  // Every message so far, once there are count (an empty vector after 10 s); the next Take
  // counts from there.
  std::vector<InboundMessage> Take(std::size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return messages_.size() >= count; });
    if (messages_.size() < count) return {};
    return std::exchange(messages_, {});
  }
  // How many messages came since the last Take.
  std::size_t arrived() {
    std::lock_guard lock(mutex_);
    return messages_.size();
  }
  std::string lost() {
    std::lock_guard lock(mutex_);
    return lost_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<InboundMessage> messages_;
  std::string lost_;
  bool hold_next_ = false;
  bool held_ = false;
  std::uint8_t* posted_ = nullptr;
  std::size_t posted_capacity_ = 0;
  int placements_asked_ = 0;
  int receives_placed_ = 0;
  int posted_after_asks_ = 0;
  std::atomic<bool> may_place_later_{false};
  std::atomic<int> wakes_asked_{0};
};

inline JobSecret TestSecret() {
  JobSecret::Bytes bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
  return JobSecret(bytes);
}

// One rank of an in-process job: its own progress engine, host and transport.
template <typename TransportType>
struct InProcessRank {
  ProgressEngine engine;
  RecordingHost host;
  std::unique_ptr<TransportType> transport;
};

// Starts ranks 0 to N-1; make(engine, host, rank) builds one rank's transport, and each learns
// every other's endpoint.
template <typename TransportType, std::size_t N, typename Make>
void StartRanks(InProcessRank<TransportType> (&ranks)[N], Make make) {
  wire::JobTable table;
  for (int rank = 0; rank < static_cast<int>(N); ++rank) {
    ranks[rank].engine.Start();
    ranks[rank].transport = make(ranks[rank].engine, ranks[rank].host, rank);
    wire::NodeInfo* node = table.add_nodes();
    node->set_rank(rank);
    node->set_host("here");
    *node->add_endpoints() = ranks[rank].transport->LocalEndpoint();
  }
  for (auto& rank : ranks) rank.transport->SetJobTable(table);
}

template <typename TransportType, std::size_t N>
void StopRanks(InProcessRank<TransportType> (&ranks)[N]) {
  for (auto& rank : ranks) rank.transport->Close();
  for (auto& rank : ranks) rank.engine.Stop();
}

}  // namespace lmdx::net

#endif  // LMDX_TESTS_NET_IN_PROCESS_HOST_H_
