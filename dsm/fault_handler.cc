#include "dsm/fault_handler.h"

#include <sigsegv.h>
#include <ucontext.h>

#include <atomic>

#include "base/crash_note.h"
#include "base/error.h"

namespace lmdx::dsm {
namespace {

std::atomic<FaultHandler*> installed{nullptr};
std::atomic<const std::function<bool(void*, FaultType)>*> current_handle{nullptr};
std::atomic<std::uintptr_t> sigbus_range_begin{0};
std::atomic<std::uintptr_t> sigbus_range_end{0};

// Ends the process with `signal`, as if LMDX had not caught it: the program's own crash, or a
// signal sent with kill or raise. Returning alone would retry a faulting instruction but let a
// sent signal pass unnoticed, so the default action is restored and the signal raised again; it
// is delivered as soon as the handler returns.
void Decline(int signal, void* address) {
  WriteCrashNote({.signal = signal, .address = address, .address_known = true});
  ::signal(SIGSEGV, SIG_DFL);
  ::signal(SIGBUS, SIG_DFL);
  ::raise(signal);
}

// Signals of faults are synchronous: the handler runs as if the faulting instruction had called
// it, so it may block on the network, take locks and allocate, as long as the faulting code held
// none of the runtime's locks. LMDX never touches the application's view of shared memory itself,
// so only application code faults here.
int OnSegv(void* address, int /*serious*/) {
  const auto* handle = current_handle.load(std::memory_order_acquire);
  if (handle != nullptr && (*handle)(address, FaultType::kUnknown)) return 1;
  Decline(SIGSEGV, address);
  return 0;
}

FaultType TypeOf(const void* context) {
#if defined(__x86_64__)
  // The page-fault error code: bit 1 is set for a write.
  const auto* machine = &static_cast<const ucontext_t*>(context)->uc_mcontext;
  return (machine->gregs[REG_ERR] & 2) != 0 ? FaultType::kWrite : FaultType::kRead;
#else
  (void)context;
  return FaultType::kUnknown;
#endif
}

void OnBus(int /*signal*/, siginfo_t* info, void* context) {
  const auto* handle = current_handle.load(std::memory_order_acquire);
  if (handle != nullptr && info->si_code == BUS_ADRERR &&
      (*handle)(info->si_addr, TypeOf(context))) {
    return;
  }
  auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  bool in_range = address >= sigbus_range_begin.load() && address < sigbus_range_end.load();
  Decline(in_range ? SIGSEGV : SIGBUS, info->si_addr);
}

}  // namespace

FaultHandler::FaultHandler(std::function<bool(void*, FaultType)> handle, bool catch_sigbus,
                           std::uintptr_t range_begin, std::uintptr_t range_end)
    : handle_(std::move(handle)), catch_sigbus_(catch_sigbus) {
  FaultHandler* expected = nullptr;
  if (!installed.compare_exchange_strong(expected, this)) {
    throw Error(LMDX_ERR_INTERNAL, "a DSM fault handler is already installed in this process");
  }
  current_handle.store(&handle_, std::memory_order_release);
  if (::sigsegv_install_handler(&OnSegv) != 0) {
    current_handle.store(nullptr);
    installed.store(nullptr);
    throw Error(LMDX_ERR_INTERNAL, "libsigsegv cannot catch page faults on this system");
  }
  if (catch_sigbus_) {
    sigbus_range_begin.store(range_begin);
    sigbus_range_end.store(range_end);
    struct sigaction action {};
    action.sa_sigaction = &OnBus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &previous_sigbus_);
  }
}

FaultHandler::~FaultHandler() {
  if (catch_sigbus_) ::sigaction(SIGBUS, &previous_sigbus_, nullptr);
  ::sigsegv_deinstall_handler();
  current_handle.store(nullptr, std::memory_order_release);
  installed.store(nullptr);
}

}  // namespace lmdx::dsm
