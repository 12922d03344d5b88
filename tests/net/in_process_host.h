// What the in-process transport tests share: a host that records what its transport delivers, and
// a job secret of their own.
#ifndef LMDX_TESTS_NET_IN_PROCESS_HOST_H_
#define LMDX_TESTS_NET_IN_PROCESS_HOST_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "net/job_secret.h"
#include "net/transport.h"

namespace lmdx::net {

// Keeps what arrives; payloads land in buffers of their own.
class RecordingHost : public TransportHost {
 public:
  std::uint8_t* PlacePayload(const FrameHeader&, const std::string&) override { return nullptr; }
  void OnMessage(InboundMessage message) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(message));
    changed_.notify_all();
  }
  void OnPeerLost(int rank, const std::string& why) override {
    std::lock_guard lock(mutex_);
    lost_ += "rank " + std::to_string(rank) + ": " + why + "\n";
  }
  // The first count messages, once they are all here (an empty vector after 10 s).
  std::vector<InboundMessage> Take(std::size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return messages_.size() >= count; });
    if (messages_.size() < count) return {};
    return std::move(messages_);
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
};

inline JobSecret TestSecret() {
  JobSecret::Bytes bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
  return JobSecret(bytes);
}

}  // namespace lmdx::net

#endif  // LMDX_TESTS_NET_IN_PROCESS_HOST_H_
