#include "net/rendezvous_link.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "net/handshake.h"
#include "net/internal/frame_io.h"
#include "net/internal/socket.h"
#include "net/wire.h"
#include "net/wire.pb.h"

namespace lmdx::net {

RendezvousLink::RendezvousLink(ProgressEngine& engine, Fd fd, const BootstrapInfo& info,
                               std::function<bool()> ending)
    : engine_(engine),
      fd_(std::move(fd)),
      info_(info),
      ending_(std::move(ending)),
      settings_(HeartbeatSettings::FromEnvironment()),
      silence_(1, settings_, MonotonicMs()) {}

void RendezvousLink::Start() {
  // The descriptor stays blocking for the writes below; reads never wait (MSG_DONTWAIT).
  internal::SetNonBlocking(fd_.get(), false);
  silence_.Watch(0, true, MonotonicMs());
  engine_.Add(fd_.get(), EPOLLIN | EPOLLRDHUP, [this](std::uint32_t) { OnReadable(); });
  if (!settings_.on()) return;
  engine_.PostAfter(settings_.period_ms, [this] { Tick(); });
  heartbeat_ = std::jthread([this](std::stop_token stop) { SendHeartbeats(stop); });
}

void RendezvousLink::SendHeartbeats(std::stop_token stop) {
  std::unique_lock lock(sleep_mutex_);
  for (;;) {
    // Wakes early only when stopped.
    sleep_.wait_for(lock, stop, std::chrono::milliseconds(settings_.period_ms),
                    [] { return false; });
    if (stop.stop_requested() || closed_) return;
    try {
      Write(MessageType::kHeartbeat, {});
    } catch (const Error& error) {
      DebugLine(std::string("cannot send a heartbeat to the rendezvous: ") + error.what());
    }
  }
}

void RendezvousLink::OnReadable() {
  if (closed_) return;
  char buffer[4096];
  ssize_t got = ::recv(fd_.get(), buffer, sizeof buffer, MSG_DONTWAIT);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (got <= 0) {
    closed_ = true;
    engine_.Remove(fd_.get());
    if (ending_()) return;
    EndThisNode("the launcher (" + info_.launcher + ", rendezvous " + info_.rendezvous +
                ") is gone; this node ends");
  }
  silence_.Heard(0, MonotonicMs());
  input_.append(buffer, static_cast<std::size_t>(got));
  while (input_.size() >= kFrameHeaderSize) {
    std::string error;
    auto header = DecodeFrameHeader(reinterpret_cast<const std::uint8_t*>(input_.data()), &error);
    if (!header || header->payload_length != 0) {
      EndThisNode("the rendezvous at " + info_.rendezvous + " sent a malformed frame" +
                  (header ? std::string() : ": " + error));
    }
    const std::size_t size = kFrameHeaderSize + header->body_length;
    if (input_.size() < size) return;
    if (header->type == MessageType::kError && !ending_()) {
      wire::ErrorReply reply;
      reply.ParseFromString(input_.substr(kFrameHeaderSize, header->body_length));
      // Whoever hosts the rendezvous has said why; each node only ends.
      DebugLine("the rendezvous ends the job: " + reply.message());
      std::fflush(nullptr);
      ::_exit(1);
    }
    input_.erase(0, size);  // a heartbeat: hearing it was the point
  }
}

// The other half of the heartbeat: the rendezvous' silence, checked where its frames are read.
void RendezvousLink::Tick() {
  if (closed_) return;
  const std::int64_t now = MonotonicMs();
  if (!silence_.Tick(now).empty() && !ending_()) {
    EndThisNode("the rendezvous at " + info_.rendezvous + " (" + info_.launcher +
                ") has sent nothing, not even a heartbeat, for " +
                SecondsText(std::chrono::milliseconds(silence_.SilentForMs(0, now))) +
                ": its process hangs or its host cannot be reached; this node ends");
  }
  engine_.PostAfter(settings_.period_ms, [this] { Tick(); });
}

void RendezvousLink::AnnounceLeaving(std::optional<int> status) {
  wire::Leave leave;
  leave.set_status_known(status.has_value());
  leave.set_status(status.value_or(0));
  try {
    Write(MessageType::kLeave, leave.SerializeAsString());
  } catch (const Error& error) {
    DebugLine(std::string("cannot announce the end of this node: ") + error.what());
  }
}

void RendezvousLink::Write(MessageType type, const std::string& body) {
  FrameHeader header;
  header.type = type;
  header.source = info_.rank;
  header.destination = Handshake::kRendezvousId;
  // A whole frame at a time, blocking: a frame cut in two by a full socket would garble the
  // stream, and these are a few dozen bytes a second.
  std::lock_guard lock(write_mutex_);
  internal::WriteControlFrame(fd_.get(), header, body);
}

void RendezvousLink::EndThisNode(const std::string& why) {
  LogLine(why);
  std::fflush(nullptr);
  ::_exit(1);
}

}  // namespace lmdx::net
