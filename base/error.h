#ifndef LMDX_BASE_ERROR_H_
#define LMDX_BASE_ERROR_H_

#include <stdexcept>
#include <string>

#include <lmdx/lmdx.h>

namespace lmdx {

// The exception every LMDX layer throws at its boundary. It carries one of the C API's codes, so
// the API turns it into a return value or a fatal message without guessing.
class Error : public std::runtime_error {
 public:
  Error(lmdx_error code, const std::string& message) : std::runtime_error(message), code_(code) {}
  lmdx_error code() const { return code_; }

 private:
  lmdx_error code_;
};

// strerror(errno) with the failed operation in front: "connect to 127.0.0.1:4000: Connection
// refused".
std::string SystemErrorText(const std::string& what, int saved_errno);

// Throws Error(LMDX_ERR_NETWORK or the given code) with SystemErrorText.
[[noreturn]] void ThrowSystemError(const std::string& what, int saved_errno,
                                   lmdx_error code = LMDX_ERR_NETWORK);

}  // namespace lmdx

#endif  // LMDX_BASE_ERROR_H_
