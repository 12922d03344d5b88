#ifndef LMDX_PREPROCESSOR_DIAGNOSTIC_H_
#define LMDX_PREPROCESSOR_DIAGNOSTIC_H_

#include <stdexcept>
#include <string>

namespace lmdx::pp {

// A place in the input, 1-based as compilers count.
struct Location {
  int line = 1;
  int column = 1;
};

// A malformed LMDX construct (or an unreadable input): the preprocessor stops at the first one.
class SourceError : public std::runtime_error {
 public:
  SourceError(Location where, const std::string& message)
      : std::runtime_error(message), where_(where) {}
  Location where() const { return where_; }

 private:
  Location where_;
};

// Something lmdxpp did that the source does not say (the main it generates), told as compilers
// tell a note, so that a program that forgot lmdx_init learns at build time how it will run.
struct SourceNote {
  Location where;
  std::string text;
};

inline std::string FormatNote(const std::string& file, const SourceNote& note) {
  return file + ":" + std::to_string(note.where.line) + ":" + std::to_string(note.where.column) +
         ": note: " + note.text;
}

// "file:line:column: error: message", the format of gcc and clang, so editors and build logs
// treat lmdxpp's errors like the compiler's.
inline std::string FormatError(const std::string& file, const SourceError& error) {
  return file + ":" + std::to_string(error.where().line) + ":" +
         std::to_string(error.where().column) + ": error: " + error.what();
}

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_DIAGNOSTIC_H_
