#include "base/error.h"

#include <cstring>

namespace lmdx {

std::string SystemErrorText(const std::string& what, int saved_errno) {
  // strerrordesc_np reads a constant table: unlike strerror it is safe from any thread.
  const char* text = strerrordesc_np(saved_errno);
  return what + ": " + (text != nullptr ? text : "error " + std::to_string(saved_errno));
}

void ThrowSystemError(const std::string& what, int saved_errno, lmdx_error code) {
  throw Error(code, SystemErrorText(what, saved_errno));
}

}  // namespace lmdx
