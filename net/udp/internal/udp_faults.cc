#include "net/udp/internal/udp_faults.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/error.h"

namespace lmdx::net::internal {

UdpFaults UdpFaults::Parse(const std::string& text, std::uint64_t default_seed) {
  UdpFaults faults;
  std::uint64_t seed = default_seed;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    if (entry.empty()) continue;
    auto equals = entry.find('=');
    std::string name = entry.substr(0, equals);
    std::string value = equals == std::string::npos ? "" : entry.substr(equals + 1);
    char* end = nullptr;
    double number = std::strtod(value.c_str(), &end);
    bool valid = !value.empty() && *end == '\0';
    if (valid && name == "seed") {
      seed = static_cast<std::uint64_t>(number);
    } else if (valid && number >= 0 && number <= 100 &&
               (name == "loss" || name == "duplicate" || name == "reorder" || name == "splice")) {
      (name == "loss"        ? faults.loss_
       : name == "duplicate" ? faults.duplicate_
       : name == "reorder"   ? faults.reorder_
                             : faults.splice_) = number / 100;
    } else {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "LMDX_UDP_FAULTS: \"" + entry +
                      "\" is not loss=P, duplicate=P, reorder=P or splice=P (a percentage from 0 "
                      "to 100) or seed=N");
    }
  }
  faults.random_.seed(seed);
  return faults;
}

UdpFaults UdpFaults::FromEnvironment(std::uint64_t default_seed) {
  const char* text = std::getenv("LMDX_UDP_FAULTS");
  return Parse(text != nullptr ? text : "", default_seed);
}

bool UdpFaults::RefuseSplice() {
  return splice_ > 0 && std::uniform_real_distribution<double>(0, 1)(random_) < splice_;
}

UdpFaults::Action UdpFaults::Next() {
  if (!any()) return Action::kSend;
  double draw = std::uniform_real_distribution<double>(0, 1)(random_);
  if (draw < loss_) return Action::kDrop;
  draw -= loss_;
  if (draw < duplicate_) return Action::kDuplicate;
  draw -= duplicate_;
  if (draw < reorder_) return Action::kHoldBack;
  return Action::kSend;
}

std::string UdpFaults::Describe() const {
  char text[128];
  std::snprintf(text, sizeof text, "loss %.1f%%, duplicate %.1f%%, reorder %.1f%%", loss_ * 100,
                duplicate_ * 100, reorder_ * 100);
  std::string described = text;
  if (splice_ > 0) {
    std::snprintf(text, sizeof text, ", splices refused %.1f%%", splice_ * 100);
    described += text;
  }
  return described;
}

}  // namespace lmdx::net::internal
