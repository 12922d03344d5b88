#include "tools/line_forwarder.h"

namespace lmdx::tools {

void LineForwarder::Append(std::string& out, std::string_view line) const {
  out += prefix_;
  out += line;
  if (line.empty() || line.back() != '\n') out += '\n';
}

void LineForwarder::Feed(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    std::size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      pending_ += data;
      break;
    }
    std::string_view head = data.substr(0, newline + 1);
    data.remove_prefix(newline + 1);
    if (pending_.empty()) {
      Append(out, head);
    } else {
      pending_ += head;
      Append(out, pending_);
      pending_.clear();
    }
  }
  while (pending_.size() >= kMaxLine) {
    Append(out, std::string_view(pending_).substr(0, kMaxLine));
    pending_.erase(0, kMaxLine);
  }
  if (!out.empty()) sink_(out);
}

void LineForwarder::Finish() {
  if (pending_.empty()) return;
  std::string out;
  Append(out, pending_);
  pending_.clear();
  sink_(out);
}

}  // namespace lmdx::tools
