// A line about what a crashing thread was running, written to stderr before a fatal signal of the
// program's own ends the process: the launcher then says which rank died, and this line says
// what it ran (a task's function and its spawner). Layers that run user code set the writer.
#ifndef LMDX_BASE_CRASH_NOTE_H_
#define LMDX_BASE_CRASH_NOTE_H_

namespace lmdx {

// Called on the crashing thread, inside the signal handler: it may only read what that thread
// set up before and write to stderr.
using CrashNoteWriter = void (*)(int signal);

void SetCrashNoteWriter(CrashNoteWriter writer);
// Runs the writer, if any (the fault handler calls it before the signal ends the process).
void WriteCrashNote(int signal);

}  // namespace lmdx

#endif  // LMDX_BASE_CRASH_NOTE_H_
