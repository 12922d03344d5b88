#include "net/heartbeat.h"

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "net/crowding.h"

namespace lmdx::net {

HeartbeatSettings HeartbeatSettings::FromEnvironment() {
  HeartbeatSettings settings;
  const char* text = std::getenv("LMDX_HEARTBEAT");
  if (text == nullptr || *text == '\0') return settings;
  char* end = nullptr;
  double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds == 0 || (seconds >= 2 && seconds <= 86400))) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                std::string("LMDX_HEARTBEAT needs the seconds of silence after which a node is "
                            "taken for hung (2 or more; 0 turns the heartbeat off), not '") +
                    text + "'");
  }
  settings.timeout_ms = static_cast<int>(seconds * 1000);
  return settings;
}

SilenceWatch::SilenceWatch(int peers, HeartbeatSettings settings, std::int64_t now_ms)
    : settings_(settings), peers_(static_cast<std::size_t>(peers)), last_tick_ms_(now_ms) {}

void SilenceWatch::Heard(int peer, std::int64_t now_ms) {
  peers_.at(static_cast<std::size_t>(peer)).last_heard_ms = now_ms;
}

void SilenceWatch::Watch(int peer, bool watched, std::int64_t now_ms) {
  Peer& state = peers_.at(static_cast<std::size_t>(peer));
  if (watched && !state.watched) state.last_heard_ms = now_ms;
  state.watched = watched;
}

std::vector<int> SilenceWatch::Tick(std::int64_t now_ms) {
  // Three periods late: this process was not running, and nobody could reach it meanwhile.
  if (now_ms - last_tick_ms_ > 3 * static_cast<std::int64_t>(settings_.period_ms)) {
    for (Peer& peer : peers_) peer.last_heard_ms = now_ms;
  }
  last_tick_ms_ = now_ms;
  std::vector<int> silent;
  if (!settings_.on()) return silent;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    Peer& peer = peers_[i];
    if (!peer.watched || peer.reported) continue;
    if (now_ms - peer.last_heard_ms >= crowding::Scaled(settings_.timeout_ms)) {
      peer.reported = true;
      silent.push_back(static_cast<int>(i));
    }
  }
  return silent;
}

std::int64_t SilenceWatch::SilentForMs(int peer, std::int64_t now_ms) const {
  return now_ms - peers_.at(static_cast<std::size_t>(peer)).last_heard_ms;
}

}  // namespace lmdx::net
