#ifndef LMDX_PREPROCESSOR_SOURCE_EDITS_H_
#define LMDX_PREPROCESSOR_SOURCE_EDITS_H_

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lmdx::pp {

// Replacements of byte ranges of a source, applied in one pass. Everything no edit touches is
// copied byte for byte, so comments, strings and layout survive preprocessing.
class SourceEdits {
 public:
  void Replace(std::size_t begin, std::size_t end, std::string text);
  void Insert(std::size_t at, std::string text) { Replace(at, at, std::move(text)); }

  // Two edits that overlap: `byte` is where the later one begins.
  struct Overlap : std::logic_error {
    Overlap(const std::string& what, std::size_t at) : std::logic_error(what), byte(at) {}
    std::size_t byte;
  };

  // The source with every edit applied. Edits must not overlap (Overlap otherwise); insertions
  // at one place keep the order they were made in.
  std::string Apply(std::string_view source) const;

 private:
  struct Edit {
    std::size_t begin;
    std::size_t end;
    std::string text;
  };
  std::vector<Edit> edits_;
};

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_SOURCE_EDITS_H_
