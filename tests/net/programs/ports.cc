// Typed ports between real nodes. argv[1] picks the scenario; each prints what it verified, and
// any mismatch aborts the job with a line that says what differed.
//   types:     several message types on several ports of every rank at once, any-source receives
//              reporting their sources, a message to this node itself, and a message that waited
//              for its port to be opened.
//   timeouts:  try_recv and recv_for on an empty port, then recv_for that gets a message.
//   async:     send_async of large messages; wait() and done(); a handle dropped unwaited.
//   malformed: (errors returned) bytes that do not parse and a message of another type reach a
//              port; each is an error naming the port and the sender, and the port goes on.
//   malformed-fatal: the same bytes in the default error mode end the job with one line.
#include <lmdx/lmdx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <lmdx/lmdx.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/net/test_messages.pb.h"

namespace {

using lmdx::test::Note;
using lmdx::test::Result;
using lmdx::test::Work;

[[noreturn]] void Mismatch(const std::string& what) {
  std::string text = "rank " + std::to_string(lmdx::rank()) + ": MISMATCH: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Expect(bool condition, const std::string& what) {
  if (!condition) Mismatch(what);
}

void Say(const std::string& text) {
  std::printf("rank %d %s\n", lmdx::rank(), text.c_str());
  std::fflush(stdout);
}

Work MakeWork(int id) {
  Work work;
  work.set_id(id);
  work.set_text("job for " + std::to_string(id));
  for (int i = 1; i <= id * 10; ++i) work.add_values(i);
  return work;
}

void Types() {
  int rank = lmdx::rank();
  int size = lmdx::size();
  lmdx::Port<Work> work("work");
  lmdx::Port<Result> results("results");
  lmdx::Port<Note> notes("notes");
  // Rank 1 writes to rank 0's port "late" before rank 0 opens it.
  if (rank == 1) {
    Note early;
    early.set_text("sent before the port opened");
    lmdx::send(lmdx::PortAddress{0, "late"}, early);
  }
  lmdx::barrier::all();
  if (rank != 0) {
    auto [job, source] = work.recv();
    Expect(source == 0, "work came from rank " + std::to_string(source));
    Expect(job.id() == rank, "work for " + std::to_string(job.id()));
    Expect(job.text() == "job for " + std::to_string(rank), "work text " + job.text());
    Result result;
    result.set_id(job.id());
    for (auto value : job.values()) result.set_sum(result.sum() + value);
    results.send(lmdx::PortAddress{0, "results"}, result);
    Note note;
    note.set_text("rank " + std::to_string(rank) + " done");
    notes.send(0, note);
    Say("worked");
    lmdx::barrier::all();
    return;
  }
  for (int dest = 1; dest < size; ++dest) work.send(dest, MakeWork(dest));
  work.send(0, MakeWork(0));
  auto self = work.recv();
  Expect(self.source == 0 && self.message.id() == 0, "the message to itself");
  std::map<int, int> result_from;
  std::map<int, int> note_from;
  // Results and notes arrive interleaved, from every worker, on two ports of two types.
  for (int i = 1; i < size; ++i) {
    auto [result, source] = results.recv();
    std::int64_t n = std::int64_t{source} * 10;
    Expect(result.id() == source,
           "result " + std::to_string(result.id()) + " from rank " + std::to_string(source));
    Expect(result.sum() == n * (n + 1) / 2, "sum " + std::to_string(result.sum()));
    ++result_from[source];
    auto note = notes.recv();
    Expect(note.message.text() == "rank " + std::to_string(note.source) + " done",
           "note " + note.message.text());
    ++note_from[note.source];
  }
  for (int r = 1; r < size; ++r) {
    Expect(result_from[r] == 1, "results from rank " + std::to_string(r));
    Expect(note_from[r] == 1, "notes from rank " + std::to_string(r));
  }
  lmdx::Port<Note> late("late");
  auto waited = late.recv();
  Expect(waited.source == 1 && waited.message.text() == "sent before the port opened",
         "the late note");
  Expect(!results.try_recv() && !notes.try_recv() && !late.try_recv(), "a message too many");
  Say("ports verified: " + std::to_string(result_from.size()) + " results, " +
      std::to_string(note_from.size()) + " notes, 1 late, 1 self");
  lmdx::barrier::all();
}

void Timeouts() {
  lmdx::Port<Note> idle("idle");
  if (lmdx::rank() == 1) {
    Expect(!idle.try_recv(), "try_recv on an empty port");
    auto start = std::chrono::steady_clock::now();
    auto nothing = idle.recv_for(std::chrono::milliseconds(200));
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    Expect(!nothing, "recv_for on an empty port");
    Expect(waited.count() >= 200 && waited.count() < 2000,
           "recv_for waited " + std::to_string(waited.count()) + " ms");
    Say("timed out after at least 200 ms");
  }
  lmdx::barrier::all();
  if (lmdx::rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Note note;
    note.set_text("in time");
    idle.send(1, note);
  } else {
    auto got = idle.recv_for(std::chrono::seconds(10));
    Expect(got.has_value(), "recv_for missed the message");
    Expect(got->source == 0 && got->message.text() == "in time", "the timely note");
    Say("timeouts verified");
  }
  lmdx::barrier::all();
}

std::string Blob(int id, std::size_t size) {
  std::string blob(size, '\0');
  for (std::size_t i = 0; i < size; ++i) blob[i] = static_cast<char>(id * 7 + i * 13 + (i >> 10));
  return blob;
}

void Async() {
  constexpr int kMessages = 12;
  constexpr std::size_t kBlob = std::size_t{2} << 20;
  lmdx::Port<Work> bulk("bulk");
  if (lmdx::rank() == 0) {
    std::vector<lmdx::PortSend> pending;
    for (int id = 0; id < kMessages - 1; ++id) {
      Work work;
      work.set_id(id);
      work.set_blob(Blob(id, kBlob));
      pending.push_back(bulk.send_async(1, work));
    }
    for (lmdx::PortSend& send : pending) {
      send.wait();
      Expect(send.done(), "done() after wait()");
    }
    {
      // A handle dropped without wait() still delivers (its destructor waits).
      Work last;
      last.set_id(kMessages - 1);
      last.set_blob(Blob(kMessages - 1, kBlob));
      lmdx::PortSend dropped = bulk.send_async(lmdx::PortAddress{1, "bulk"}, last);
    }
    Say("async sends completed");
  } else {
    for (int id = 0; id < kMessages; ++id) {
      auto [work, source] = bulk.recv();
      Expect(source == 0, "source " + std::to_string(source));
      Expect(work.id() == id,
             "message " + std::to_string(work.id()) + " where " + std::to_string(id) + " was due");
      Expect(work.blob() == Blob(id, kBlob), "the blob of message " + std::to_string(id));
    }
    Say("async verified " + std::to_string(kMessages) + " messages");
  }
  lmdx::barrier::all();
}

void Malformed(bool fatal) {
  if (!fatal) lmdx::set_error_mode(lmdx::errors::throw_exceptions);
  lmdx::Port<Work> work("work");
  if (lmdx::rank() == 0) {
    // A length-delimited field 1 that claims 127 bytes and has none.
    const char garbage[] = {'\x0a', '\x7f'};
    lmdx_port_send(1, "work", "lmdx.test.Work", garbage, sizeof garbage);
    Note note;
    note.set_text("not a work item");
    lmdx::send(lmdx::PortAddress{1, "work"}, note);
    work.send(1, MakeWork(4));
  } else {
    for (int i = 0; i < 2; ++i) {
      try {
        auto unexpected = work.recv();
        Mismatch("a bad message was received as work " + std::to_string(unexpected.message.id()));
      } catch (const lmdx::error& error) {
        Say("error " + std::to_string(error.code()) + ": " + error.what());
      }
    }
    auto [job, source] = work.recv();
    Expect(job.id() == 4 && source == 0, "the good message after the bad ones");
    Say("the port goes on: work 4 from rank 0");
  }
  lmdx::barrier::all();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    lmdx::init_spmd(argc, argv);
    std::string mode = argc > 1 ? argv[1] : "types";
    if (mode == "types") {
      Types();
    } else if (mode == "timeouts") {
      Timeouts();
    } else if (mode == "async") {
      Async();
    } else if (mode == "malformed") {
      Malformed(false);
    } else if (mode == "malformed-fatal") {
      Malformed(true);
    } else {
      Mismatch("unknown mode " + mode);
    }
    lmdx::finalize();
  } catch (const std::exception& error) {
    Mismatch(std::string("uncaught: ") + error.what());
  }
  return 0;
}
