#include "base/error.h"

#include <cstring>

namespace lmdx {

std::string SystemErrorText(const std::string& what, int saved_errno) {
  return what + ": " + std::strerror(saved_errno);
}

void ThrowSystemError(const std::string& what, int saved_errno, lmdx_error code) {
  throw Error(code, SystemErrorText(what, saved_errno));
}

}  // namespace lmdx
