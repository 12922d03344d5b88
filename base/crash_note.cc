#include "base/crash_note.h"

#include <atomic>

namespace lmdx {
namespace {
std::atomic<CrashNoteWriter> writer{nullptr};
}  // namespace

void SetCrashNoteWriter(CrashNoteWriter note_writer) {
  writer.store(note_writer, std::memory_order_release);
}

void WriteCrashNote(int signal) {
  CrashNoteWriter note_writer = writer.load(std::memory_order_acquire);
  if (note_writer != nullptr) note_writer(signal);
}

}  // namespace lmdx
