// Catches the application's faults on shared pages. Faults elsewhere are not ours: the handler
// declines them and the process gets the usual signal, as without LMDX.
//
// Under mprotect a fault is a SIGSEGV, caught through libsigsegv, which does not say whether the
// access was a read or a write. Under userfaultfd it is a SIGBUS (UFFD_FEATURE_SIGBUS), caught
// with a handler of our own that reads the access type from the signal context.
//
// Only one FaultHandler exists at a time (libsigsegv has one handler per process).
#ifndef LMDX_DSM_FAULT_HANDLER_H_
#define LMDX_DSM_FAULT_HANDLER_H_

#include <signal.h>

#include <cstdint>
#include <functional>

namespace lmdx::dsm {

enum class FaultType : std::uint8_t { kUnknown, kRead, kWrite };

class FaultHandler {
 public:
  // handle(address, type) returns true when it resolved the fault (the access is retried), false
  // when the address is not shared memory. It runs inside the signal handler of the faulting
  // thread. With catch_sigbus, SIGBUS is caught too; a declined SIGBUS inside
  // [range_begin, range_end) ends the process with SIGSEGV, as an invalid access there does under
  // mprotect.
  FaultHandler(std::function<bool(void*, FaultType)> handle, bool catch_sigbus = false,
               std::uintptr_t range_begin = 0, std::uintptr_t range_end = 0);
  ~FaultHandler();
  FaultHandler(const FaultHandler&) = delete;
  FaultHandler& operator=(const FaultHandler&) = delete;

 private:
  std::function<bool(void*, FaultType)> handle_;
  bool catch_sigbus_;
  struct sigaction previous_sigbus_ {};
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_FAULT_HANDLER_H_
