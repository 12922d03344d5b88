// Small helpers the sync test programs share: a request/reply exchange with rank 0 over raw
// messages, and a check that ends the job with a message naming the rank.
#ifndef LMDX_TESTS_SYNC_PROGRAMS_COMMON_H_
#define LMDX_TESTS_SYNC_PROGRAMS_COMMON_H_

#include <lmdx/lmdx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sync_checks {

struct Op {
  std::int64_t op;
  std::int64_t value;
};

[[noreturn]] inline void Die(const std::string& what) {
  std::string text = "rank " + std::to_string(lmdx_rank()) + ": FAILED: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

inline void Check(bool ok, const std::string& what) {
  if (!ok) Die(what);
}

inline void Ok(int code, const char* call) {
  if (code != LMDX_OK) Die(std::string(call) + " returned " + std::to_string(code));
}

// Sends op to rank 0 and waits for its answer. The caller makes sure only one thread of this
// node waits for rank 0 at a time.
inline Op Ask(Op op) {
  Ok(lmdx_send(0, &op, sizeof op), "lmdx_send");
  Op reply{};
  lmdx_status status{};
  Ok(lmdx_recv(0, &reply, sizeof reply, &status), "lmdx_recv");
  Check(status.length == sizeof reply, "a reply of the wrong size");
  return reply;
}

inline void Answer(int dest, Op op) { Ok(lmdx_send(dest, &op, sizeof op), "lmdx_send"); }

}  // namespace sync_checks

#endif  // LMDX_TESTS_SYNC_PROGRAMS_COMMON_H_
