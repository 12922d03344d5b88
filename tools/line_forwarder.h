#ifndef LMDX_TOOLS_LINE_FORWARDER_H_
#define LMDX_TOOLS_LINE_FORWARDER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lmdx::tools {

// Cuts one node's output stream into whole lines and hands them on, each with an optional prefix
// ("[2] "). The launcher has one per node stream and writes each batch with a single write, so
// lines of different nodes never mix within a line.
class LineForwarder {
 public:
  using Sink = std::function<void(std::string_view)>;

  // A line longer than this is cut (with a newline added) so one node cannot make the launcher
  // hold unbounded memory.
  static constexpr std::size_t kMaxLine = 64 * 1024;

  LineForwarder(std::string prefix, Sink sink)
      : prefix_(std::move(prefix)), sink_(std::move(sink)) {}

  // Passes on every line completed by data; keeps the rest for the next call.
  void Feed(std::string_view data);
  // The stream ended: passes on a last line without newline, with a newline added.
  void Finish();

 private:
  void Append(std::string& out, std::string_view line) const;

  std::string prefix_;
  Sink sink_;
  std::string pending_;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_LINE_FORWARDER_H_
