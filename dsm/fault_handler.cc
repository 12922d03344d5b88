#include "dsm/fault_handler.h"

#include <signal.h>
#include <sigsegv.h>

#include <atomic>

#include "base/error.h"

namespace lmdx::dsm {
namespace {

std::atomic<FaultHandler*> installed{nullptr};
std::atomic<const std::function<bool(void*)>*> current_handle{nullptr};

// SIGSEGV is synchronous: the handler runs as if the faulting instruction had called it, so it
// may block on the network, take locks and allocate, as long as the faulting code held none of
// the runtime's locks. LMDX never touches the application's view of shared memory itself, so
// only application code faults here.
int OnFault(void* address, int /*serious*/) {
  const auto* handle = current_handle.load(std::memory_order_acquire);
  if (handle != nullptr && (*handle)(address)) return 1;
  // Not shared memory: the program's own crash, or a SIGSEGV sent with kill or raise. Either must
  // end the process with the signal, as without LMDX. Returning alone would retry a faulting
  // instruction but let a sent signal pass unnoticed, so the default action is restored and the
  // signal raised again; it is delivered as soon as this handler returns.
  ::signal(SIGSEGV, SIG_DFL);
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGSEGV);
  return 0;
}

}  // namespace

FaultHandler::FaultHandler(std::function<bool(void*)> handle) : handle_(std::move(handle)) {
  FaultHandler* expected = nullptr;
  if (!installed.compare_exchange_strong(expected, this)) {
    throw Error(LMDX_ERR_INTERNAL, "a DSM fault handler is already installed in this process");
  }
  current_handle.store(&handle_, std::memory_order_release);
  if (::sigsegv_install_handler(&OnFault) != 0) {
    current_handle.store(nullptr);
    installed.store(nullptr);
    throw Error(LMDX_ERR_INTERNAL, "libsigsegv cannot catch page faults on this system");
  }
}

FaultHandler::~FaultHandler() {
  ::sigsegv_deinstall_handler();
  current_handle.store(nullptr, std::memory_order_release);
  installed.store(nullptr);
}

}  // namespace lmdx::dsm
