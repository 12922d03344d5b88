// Catches the application's faults on shared pages through libsigsegv. Faults elsewhere are not
// ours: the handler declines them and the process gets the usual signal, as without LMDX.
//
// Only one FaultHandler exists at a time (libsigsegv has one handler per process).
#ifndef LMDX_DSM_FAULT_HANDLER_H_
#define LMDX_DSM_FAULT_HANDLER_H_

#include <functional>

namespace lmdx::dsm {

class FaultHandler {
 public:
  // handle(address) returns true when it resolved the fault (the access is retried), false when
  // the address is not shared memory. It runs inside the SIGSEGV handler of the faulting thread.
  explicit FaultHandler(std::function<bool(void*)> handle);
  ~FaultHandler();
  FaultHandler(const FaultHandler&) = delete;
  FaultHandler& operator=(const FaultHandler&) = delete;

 private:
  std::function<bool(void*)> handle_;
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_FAULT_HANDLER_H_
