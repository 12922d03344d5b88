#include "preprocessor/source_edits.h"

#include <algorithm>
#include <stdexcept>

namespace lmdx::pp {

void SourceEdits::Replace(std::size_t begin, std::size_t end, std::string text) {
  edits_.push_back({begin, end, std::move(text)});
}

std::string SourceEdits::Apply(std::string_view source) const {
  std::vector<Edit> sorted = edits_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(source.size() + source.size() / 4);
  std::size_t copied = 0;
  for (const Edit& edit : sorted) {
    if (edit.begin < copied || edit.end > source.size()) {
      throw Overlap("lmdxpp: overlapping edits at byte " + std::to_string(edit.begin), edit.begin);
    }
    out.append(source.substr(copied, edit.begin - copied));
    out += edit.text;
    copied = edit.end;
  }
  out.append(source.substr(copied));
  return out;
}

}  // namespace lmdx::pp
