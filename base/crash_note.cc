#include "base/crash_note.h"

#include <atomic>

namespace lmdx {
namespace {
std::atomic<CrashNoteWriter> writer{nullptr};
// A crash may pass through the fault handler twice (the faulting instruction runs again before
// the signal raised for it arrives): the note is written once.
std::atomic<bool> written{false};
}  // namespace

void SetCrashNoteWriter(CrashNoteWriter note_writer) {
  writer.store(note_writer, std::memory_order_release);
}

void WriteCrashNote(int signal) {
  CrashNoteWriter note_writer = writer.load(std::memory_order_acquire);
  if (note_writer != nullptr && !written.exchange(true)) note_writer(signal);
}

}  // namespace lmdx
