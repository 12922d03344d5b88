#include "net/udp/internal/reliable_channel.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace lmdx::net::internal {
namespace {

constexpr int kResendAfterLater = 3;

std::int32_t Distance(std::uint32_t from, std::uint32_t to) {
  return static_cast<std::int32_t>(to - from);
}

}  // namespace

bool ReliableChannel::CanSend() const {
  std::size_t in_flight = unacked_.size();
  return in_flight < settings_.window && in_flight < peer_room_;
}

std::uint32_t ReliableChannel::Record(Segment segment, std::int64_t now_ms) {
  std::uint32_t sequence = next_sequence_++;
  Unacked entry;
  entry.segment = std::move(segment);
  entry.sent_ms = now_ms;
  entry.last_sent_ms = now_ms;
  entry.backoff_ms = rto_ms_;
  entry.deadline_ms = now_ms + rto_ms_;
  unacked_.emplace(sequence, std::move(entry));
  return sequence;
}

bool ReliableChannel::AcknowledgedThrough(std::uint32_t sequence) const {
  return unacked_.empty() || Distance(sequence, unacked_.begin()->first) > 0;
}

ReliableChannel::Segment ReliableChannel::Stored(std::uint32_t sequence) const {
  auto it = unacked_.find(sequence);
  return it != unacked_.end() ? it->second.segment : nullptr;
}

void ReliableChannel::Sample(std::int64_t rtt_ms) {
  auto rtt = static_cast<double>(rtt_ms);
  if (!have_sample_) {
    srtt_ms_ = rtt;
    rttvar_ms_ = rtt / 2;
    have_sample_ = true;
  } else {
    rttvar_ms_ = 0.75 * rttvar_ms_ + 0.25 * std::fabs(srtt_ms_ - rtt);
    srtt_ms_ = 0.875 * srtt_ms_ + 0.125 * rtt;
  }
  auto rto = static_cast<std::int64_t>(std::ceil(srtt_ms_ + 4 * rttvar_ms_));
  rto_ms_ = std::clamp(rto, settings_.min_rto_ms, settings_.max_rto_ms);
}

void ReliableChannel::Resend(std::uint32_t sequence, Unacked& entry, std::int64_t now_ms,
                             std::vector<std::uint32_t>* resend) {
  resend->push_back(sequence);
  entry.resent = true;
  entry.last_sent_ms = now_ms;
  entry.backoff_ms = std::min(entry.backoff_ms * 2, settings_.max_rto_ms);
  entry.deadline_ms = now_ms + entry.backoff_ms;
  ++retransmitted_;
}

void ReliableChannel::OnAcknowledgement(std::uint32_t cumulative, std::uint32_t selective,
                                        std::uint32_t room,
                                        const std::optional<std::uint32_t>& echo,
                                        std::int64_t now_ms, std::vector<std::uint32_t>* resend) {
  // An acknowledgement of segments never sent is a broken or hostile peer: ignore it whole.
  if (Distance(next_sequence_, cumulative) > 0) return;
  peer_room_ = room;
  if (echo) {
    auto it = unacked_.find(*echo);
    if (it != unacked_.end() && !it->second.resent) Sample(now_ms - it->second.sent_ms);
  }
  while (!unacked_.empty() && Distance(unacked_.begin()->first, cumulative) > 0) {
    unacked_.erase(unacked_.begin());
  }
  if (selective == 0) return;
  int highest = 31 - __builtin_clz(selective);
  for (int bit = 0; bit <= highest; ++bit) {
    std::uint32_t sequence = cumulative + 1 + static_cast<std::uint32_t>(bit);
    if ((selective >> bit) & 1u) unacked_.erase(sequence);
  }
  // A segment the peer still lacks while at least kResendAfterLater segments sent after it have
  // arrived is lost, not late (a reordered datagram is rarely that late): resend it now rather
  // than wait for its timeout, and again if it stays missing for two round trips more.
  std::int64_t quiet = std::max<std::int64_t>(2, static_cast<std::int64_t>(2 * srtt_ms_));
  int arrived_after = 0;
  for (int bit = highest; bit >= -1; --bit) {
    if (bit >= 0 && ((selective >> bit) & 1u)) {
      ++arrived_after;
      continue;
    }
    if (arrived_after < kResendAfterLater) continue;
    std::uint32_t sequence = cumulative + 1 + static_cast<std::uint32_t>(bit);
    auto it = unacked_.find(sequence);
    if (it != unacked_.end() && now_ms - it->second.last_sent_ms >= quiet) {
      Resend(sequence, it->second, now_ms, resend);
    }
  }
}

void ReliableChannel::TakeExpired(std::int64_t now_ms, std::vector<std::uint32_t>* resend) {
  // Only the oldest expired segment goes again: after a stall every segment behind it expires
  // together, and most of them arrived (their acknowledgement waits for the oldest). The others
  // wait one more timeout; the peer's answer to the resent one says which are really missing.
  bool resent_one = false;
  for (auto& [sequence, entry] : unacked_) {
    if (entry.deadline_ms > now_ms) continue;
    if (!resent_one) {
      Resend(sequence, entry, now_ms, resend);
      resent_one = true;
    } else {
      entry.deadline_ms = now_ms + rto_ms_;
    }
  }
}

bool ReliableChannel::PeerSilent(std::int64_t now_ms) const {
  return !unacked_.empty() && now_ms - unacked_.begin()->second.sent_ms > settings_.give_up_ms;
}

ReliableChannel::Arrival ReliableChannel::OnData(std::uint32_t sequence,
                                                 std::span<const std::uint8_t> bytes,
                                                 std::int64_t now_ms,
                                                 std::vector<Received>* ready) {
  std::int32_t ahead = Distance(next_expected_, sequence);
  if (ahead < 0 || held_.count(sequence) != 0) {
    // The sender did not hear that this arrived: tell it again at once.
    ack_now_ = true;
    return Arrival::kDuplicate;
  }
  if (static_cast<std::uint32_t>(ahead) >= settings_.window) return Arrival::kOutOfWindow;
  if (unacked_received_++ == 0) first_unacked_ms_ = now_ms;
  echo_ = sequence;
  if (ahead > 0) {
    held_.emplace(sequence,
                  std::make_shared<const std::vector<std::uint8_t>>(bytes.begin(), bytes.end()));
    ack_now_ = true;
    return Arrival::kHeld;
  }
  ready->push_back(Received{nullptr, bytes});
  ++next_expected_;
  while (!held_.empty() && held_.begin()->first == next_expected_) {
    Segment kept = std::move(held_.begin()->second);
    std::span<const std::uint8_t> kept_bytes(*kept);
    ready->push_back(Received{std::move(kept), kept_bytes});
    held_.erase(held_.begin());
    ++next_expected_;
  }
  return Arrival::kDelivered;
}

std::uint32_t ReliableChannel::SelectiveAck() const {
  std::uint32_t bits = 0;
  for (const auto& [sequence, segment] : held_) {
    std::int32_t offset = Distance(next_expected_, sequence) - 1;
    if (offset >= 0 && offset < 32) bits |= 1u << offset;
  }
  return bits;
}

std::uint32_t ReliableChannel::Room() const {
  return settings_.window - static_cast<std::uint32_t>(held_.size());
}

std::optional<std::uint32_t> ReliableChannel::TakeEcho() {
  return std::exchange(echo_, std::nullopt);
}

bool ReliableChannel::AckDue(std::int64_t now_ms) const {
  if (ack_now_ || unacked_received_ >= settings_.ack_every) return true;
  return unacked_received_ > 0 && now_ms - first_unacked_ms_ >= settings_.ack_delay_ms;
}

void ReliableChannel::AckSent() {
  unacked_received_ = 0;
  ack_now_ = false;
}

std::int64_t ReliableChannel::NextDeadline() const {
  std::int64_t soonest = -1;
  auto consider = [&soonest](std::int64_t when) {
    if (soonest < 0 || when < soonest) soonest = when;
  };
  for (const auto& [sequence, entry] : unacked_) consider(entry.deadline_ms);
  if (ack_now_) consider(0);
  if (unacked_received_ > 0) consider(first_unacked_ms_ + settings_.ack_delay_ms);
  return soonest;
}

}  // namespace lmdx::net::internal
