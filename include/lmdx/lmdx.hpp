// LMDX: the C++ API. A thin layer over the C API of <lmdx/lmdx.h>: the same calls, with
// exceptions (lmdx::error) in place of error codes and spans in place of pointer and length.
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
// C++ calls always run the C API in LMDX_ERRORS_RETURN mode for their own thread's call, so that a
// failure becomes an exception the caller may catch, whatever the program chose for C calls.
class ReturnErrorsScope {
 public:
  ReturnErrorsScope() : saved_(lmdx_get_error_mode()) { lmdx_set_error_mode(LMDX_ERRORS_RETURN); }
  ~ReturnErrorsScope() { lmdx_set_error_mode(saved_); }
  ReturnErrorsScope(const ReturnErrorsScope&) = delete;
  ReturnErrorsScope& operator=(const ReturnErrorsScope&) = delete;

 private:
  lmdx_error_mode saved_;
};

inline int check(int code) {
  if (code < 0) {
    const char* text = lmdx_last_error_message();
    throw error(code, text != nullptr && *text != '\0' ? text : lmdx_strerror(code));
  }
  return code;
}
}  // namespace detail

struct status {
  int source = -1;
  std::size_t length = 0;
};

// Threads style: returns on rank 0 only.
inline void init(int& argc, char**& argv) {
  detail::ReturnErrorsScope scope;
  detail::check(lmdx_init(&argc, &argv));
}
// SPMD style: returns on every rank.
inline void init_spmd(int& argc, char**& argv) {
  detail::ReturnErrorsScope scope;
  detail::check(lmdx_init_spmd(&argc, &argv));
}
inline void finalize() {
  detail::ReturnErrorsScope scope;
  detail::check(lmdx_finalize());
}
inline int rank() { return lmdx_rank(); }
inline int size() { return lmdx_size(); }

inline void send(int dest, std::span<const std::byte> bytes) {
  detail::ReturnErrorsScope scope;
  detail::check(lmdx_send(dest, bytes.data(), bytes.size()));
}
inline status recv(int source, std::span<std::byte> buffer) {
  detail::ReturnErrorsScope scope;
  lmdx_status st{};
  detail::check(lmdx_recv(source, buffer.data(), buffer.size(), &st));
  return status{st.source, st.length};
}
inline constexpr int any_source = LMDX_ANY_SOURCE;

}  // namespace lmdx

#endif  // LMDX_LMDX_HPP_
