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

// "file:line:column: error: message", the format of gcc and clang, so editors and build logs
// treat lmdxpp's errors like the compiler's.
inline std::string FormatError(const std::string& file, const SourceError& error) {
  return file + ":" + std::to_string(error.where().line) + ":" +
         std::to_string(error.where().column) + ": error: " + error.what();
}

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_DIAGNOSTIC_H_
