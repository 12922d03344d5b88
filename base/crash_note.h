// Lines about a crash, written to stderr before a fatal signal of the program's own ends the
// process: the launcher then says which rank died, and these lines say what the crashing thread
// ran (a task's function and its spawner, an LMDX thread's function and its starter) and where
// the fault went (shared memory or not, mapped or not). Layers that run user code add writers.
#ifndef LMDX_BASE_CRASH_NOTE_H_
#define LMDX_BASE_CRASH_NOTE_H_

#include <cstdint>

namespace lmdx {

// What the fault handler knows of a crash.
struct CrashSite {
  int signal = 0;
  // The faulting address, when the signal came from a fault (not from kill or raise).
  const void* address = nullptr;
  bool address_known = false;
};

// Called on the crashing thread, inside the signal handler: it may only read what that thread
// set up before (or take a lock with try_lock) and write to stderr.
using CrashNoteWriter = void (*)(const CrashSite& site);

// Writers of what the crashing thread ran; each writes a line only when that thread runs what it
// knows of. At most a handful (one per layer); a layer adds its writer once.
void AddCrashNoteWriter(CrashNoteWriter writer);

// The node's rank and its shared range, so the note can say which node crashed and whether the
// faulting address (or a thread's argument) was shared memory. Set by the DSM when it maps.
void SetCrashNoteNode(int rank, std::uintptr_t shared_begin, std::uintptr_t shared_end);
int CrashNoteRank();
// False when no shared range was set.
bool InSharedRange(const void* address);

// Runs the writers, then says where a fault outside shared memory went (the fault handler calls
// it before the signal ends the process). Written once per process.
void WriteCrashNote(const CrashSite& site);

}  // namespace lmdx

#endif  // LMDX_BASE_CRASH_NOTE_H_
