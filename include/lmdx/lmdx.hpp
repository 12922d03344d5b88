// LMDX: the C++ API. A thin layer over the C API of <lmdx/lmdx.h>: the same calls, with spans in
// place of pointer and length. Errors follow the error mode: by default a failure ends the job
// with a clear message, as in C; after lmdx_set_error_mode(LMDX_ERRORS_RETURN) (or
// lmdx::set_error_mode(lmdx::errors::throw_exceptions)) a failing call throws lmdx::error, which
// carries the C code and its text.
#ifndef LMDX_LMDX_HPP_
#define LMDX_LMDX_HPP_

#include <lmdx/lmdx.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

namespace lmdx {

// Thrown by every C++ call that fails; code() is the C API's lmdx_error.
class error : public std::runtime_error {
 public:
  error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {
inline int check(int code) {
  if (code < 0) {
    const char* text = lmdx_last_error_message();
    throw error(code, text != nullptr && *text != '\0' ? text : lmdx_strerror(code));
  }
  return code;
}
}  // namespace detail

enum class errors { fatal = LMDX_ERRORS_ARE_FATAL, throw_exceptions = LMDX_ERRORS_RETURN };
inline void set_error_mode(errors mode) { lmdx_set_error_mode(static_cast<lmdx_error_mode>(mode)); }

struct status {
  int source = -1;
  std::size_t length = 0;
};

// Threads style: returns on rank 0 only.
inline void init(int& argc, char**& argv) { detail::check(lmdx_init(&argc, &argv)); }
// SPMD style: returns on every rank.
inline void init_spmd(int& argc, char**& argv) { detail::check(lmdx_init_spmd(&argc, &argv)); }
inline void finalize() { detail::check(lmdx_finalize()); }
inline int rank() { return lmdx_rank(); }
inline int size() { return lmdx_size(); }

inline void send(int dest, std::span<const std::byte> bytes) {
  detail::check(lmdx_send(dest, bytes.data(), bytes.size()));
}
inline status recv(int source, std::span<std::byte> buffer) {
  lmdx_status st{};
  detail::check(lmdx_recv(source, buffer.data(), buffer.size(), &st));
  return status{st.source, st.length};
}
inline constexpr int any_source = LMDX_ANY_SOURCE;

}  // namespace lmdx

#endif  // LMDX_LMDX_HPP_
