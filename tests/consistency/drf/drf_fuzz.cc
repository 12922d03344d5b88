// One job of the DRF fuzzer: the programs of one seed (program.h), every read checked against the
// oracle (oracle.h) as it happens.
//   drf_fuzz --seed S --protocol P --programs K --oracle FILE
// SPMD on the number of nodes the seed's layout names. The first wrong value ends the job with one
// line naming the seed, the program, the round, the step, the thread and its node, the variable
// and its protocol, the value read and the one expected, and which operations wrote each. Rank 0
// prints "verified: seed S, K programs, N reads" when every read was right.
#include <lmdx/lmdx.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/consistency/drf/oracle.h"
#include "tests/consistency/drf/program.h"

namespace lmdx::drf {
namespace {

struct Options {
  std::uint64_t seed = 0;
  std::string protocol;
  int programs = 1;
  std::string oracle;
};

struct Job {
  Options options;
  Layout layout;
  std::vector<std::byte*> bases;      // each variable's address
  std::vector<std::size_t> image_at;  // each variable's offset in the oracle
  std::unique_ptr<Oracle> oracle;
  std::atomic<std::uint64_t> reads{0};
  std::mutex programs_mutex;
  std::map<int, std::shared_ptr<const Program>> programs;
};
Job job_;

[[noreturn]] void Fail(const std::string& what) {
  std::string text = "drf_fuzz: rank " + std::to_string(lmdx_rank()) + ": seed " +
                     std::to_string(job_.options.seed) + ": " + what;
  lmdx_abort(3, text.c_str());
  std::abort();
}

void Ok(int code, const std::string& call) {
  if (code != LMDX_OK) Fail(call + " returned " + std::to_string(code));
}

// Every node makes the same programs from the seed; a thread started on another node finds its
// program here, made on demand.
std::shared_ptr<const Program> ProgramAt(int index) {
  std::lock_guard lock(job_.programs_mutex);
  auto& slot = job_.programs[index];
  if (!slot) slot = std::make_shared<const Program>(MakeProgram(job_.layout, index));
  // The job runs programs in order: two behind are done with everywhere.
  job_.programs.erase(job_.programs.begin(), job_.programs.lower_bound(index - 2));
  return slot;
}

std::string Hex(std::uint64_t value, int bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%0*" PRIx64, 2 * bytes, value);
  return text;
}

std::string WrittenBy(const WriteTag& tag, const Program& program) {
  if (!tag.written) return "no write of this job (the initial zero)";
  std::string text = "step " + std::to_string(tag.step) + " of round " + std::to_string(tag.round) +
                     " of program " + std::to_string(tag.program);
  if (tag.program == static_cast<std::uint32_t>(program.index) &&
      tag.round < program.rounds.size()) {
    text += " by " +
            DescribeThread(job_.layout, program.rounds[tag.round], static_cast<int>(tag.thread));
  }
  return text;
}

// The writes of this program that stored `value` at the location: where a stale value came from.
std::string WritesOf(const Program& program, int location, std::uint64_t value) {
  std::string found;
  int count = 0;
  for (std::size_t r = 0; r < program.rounds.size(); ++r) {
    for (const Op& op : program.rounds[r].ops) {
      if ((op.kind != OpKind::kWrite && op.kind != OpKind::kPut) || op.location != location ||
          op.value != value) {
        continue;
      }
      if (++count > 3) continue;
      found += (found.empty() ? "" : ", ") + std::string("step ") + std::to_string(op.step) +
               " of round " + std::to_string(r) + " by " +
               DescribeThread(job_.layout, program.rounds[r], op.thread);
    }
  }
  if (count == 0) {
    return value == 0 ? "the initial zero"
                      : "no write of this program (an earlier program's, or a mix of bytes)";
  }
  return "written at " + found + (count > 3 ? " and " + std::to_string(count - 3) + " more" : "");
}

void Check(const Program& program, int round, const Op& op, std::uint64_t got) {
  const Location& loc = program.locations[static_cast<std::size_t>(op.location)];
  const std::size_t at = job_.image_at[static_cast<std::size_t>(loc.variable)] + loc.offset;
  std::uint64_t expected = 0;
  job_.oracle->Read(at, &expected, static_cast<std::size_t>(loc.bytes));
  job_.reads.fetch_add(1, std::memory_order_relaxed);
  if (got == expected) return;
  const Variable& variable = job_.layout.variables[static_cast<std::size_t>(loc.variable)];
  const Round& r = program.rounds[static_cast<std::size_t>(round)];
  char where[64];
  std::snprintf(where, sizeof where, "%s+0x%zx (page %zu)", variable.name.c_str(), loc.offset,
                loc.offset / kPageBytes);
  Fail("WRONG VALUE in program " + std::to_string(program.index) + ", round " +
       std::to_string(round) + ", step " + std::to_string(op.step) + ": " +
       DescribeThread(job_.layout, r, op.thread) + " read " + std::to_string(loc.bytes) +
       " byte(s) of " + where + " under " + variable.protocol + " (homes " + variable.home +
       ") with " + OpName(op.kind) + ": got " + Hex(got, loc.bytes) + " (" +
       WritesOf(program, op.location, got) + "), expected " + Hex(expected, loc.bytes) +
       " (written last at " + WrittenBy(job_.oracle->TagOf(at), program) + ")");
}

std::byte* AddressOf(const Program& program, const Op& op) {
  const Location& loc = program.locations[static_cast<std::size_t>(op.location)];
  return job_.bases[static_cast<std::size_t>(loc.variable)] + loc.offset;
}

std::uint64_t LoadPlain(const std::byte* address, int bytes) {
  if (bytes == 1) return *reinterpret_cast<const volatile std::uint8_t*>(address);
  return *reinterpret_cast<const volatile std::uint64_t*>(address);
}

void StorePlain(std::byte* address, int bytes, std::uint64_t value) {
  if (bytes == 1) {
    *reinterpret_cast<volatile std::uint8_t*>(address) = static_cast<std::uint8_t>(value);
  } else {
    *reinterpret_cast<volatile std::uint64_t*>(address) = value;
  }
}

void* ThreadEntry(void* argument);

// Runs one thread's operations of a round, in its order.
void RunThread(const Program& program, int round, int thread) {
  const Round& r = program.rounds[static_cast<std::size_t>(round)];
  std::map<int, lmdx_thread_t> started;
  std::map<int, std::thread> started_os;
  auto where = [&](const Op& op) {
    return " at step " + std::to_string(op.step) + " of program " + std::to_string(program.index) +
           ", round " + std::to_string(round) + ", " + DescribeThread(job_.layout, r, thread);
  };
  for (std::uint32_t index : r.per_thread[static_cast<std::size_t>(thread)]) {
    const Op& op = r.ops[index];
    switch (op.kind) {
      case OpKind::kRead:
        Check(program, round, op,
              LoadPlain(AddressOf(program, op),
                        program.locations[static_cast<std::size_t>(op.location)].bytes));
        break;
      case OpKind::kGet: {
        std::uint64_t value = 0;
        const int bytes = program.locations[static_cast<std::size_t>(op.location)].bytes;
        Ok(lmdx_get(&value, AddressOf(program, op), static_cast<std::size_t>(bytes)),
           "lmdx_get" + where(op));
        Check(program, round, op, value);
        break;
      }
      case OpKind::kWrite:
      case OpKind::kPut: {
        const Location& loc = program.locations[static_cast<std::size_t>(op.location)];
        if (op.kind == OpKind::kWrite) {
          StorePlain(AddressOf(program, op), loc.bytes, op.value);
        } else {
          Ok(lmdx_put(AddressOf(program, op), &op.value, static_cast<std::size_t>(loc.bytes)),
             "lmdx_put" + where(op));
        }
        job_.oracle->Write(
            job_.image_at[static_cast<std::size_t>(loc.variable)] + loc.offset, &op.value,
            static_cast<std::size_t>(loc.bytes),
            {static_cast<std::uint32_t>(program.index), static_cast<std::uint32_t>(round),
             static_cast<std::uint32_t>(thread), op.step, true});
        break;
      }
      case OpKind::kLock: Ok(lmdx_lock(LockName(op.lock).c_str()), "lmdx_lock" + where(op)); break;
      case OpKind::kUnlock:
        Ok(lmdx_unlock(LockName(op.lock).c_str()), "lmdx_unlock" + where(op));
        break;
      case OpKind::kSemaV:
        Ok(lmdx_sema_v(SemaphoreName(thread, op.other).c_str()), "lmdx_sema_v" + where(op));
        break;
      case OpKind::kSemaP:
        Ok(lmdx_sema_p(SemaphoreName(op.other, thread).c_str()), "lmdx_sema_p" + where(op));
        break;
      case OpKind::kBarrier:
        Ok(lmdx_barrier(BarrierName(program.index, round).c_str()), "lmdx_barrier" + where(op));
        break;
      case OpKind::kBarrierAll: Ok(lmdx_barrier_all(), "lmdx_barrier_all" + where(op)); break;
      case OpKind::kStart: {
        if (job_.layout.os_threads) {
          started_os[op.other] = std::thread(RunThread, std::cref(program), round, op.other);
          break;
        }
        // program (24 bits), round (8), thread (8): the started node looks its program up.
        const auto code = (static_cast<std::uintptr_t>(program.index) << 16) |
                          (static_cast<std::uintptr_t>(round) << 8) |
                          static_cast<std::uintptr_t>(op.other);
        lmdx_thread_t handle =
            lmdx_start_thread_on(r.threads[static_cast<std::size_t>(op.other)].node, ThreadEntry,
                                 reinterpret_cast<void*>(code));
        if (handle == LMDX_THREAD_INVALID) Fail("lmdx_start_thread_on" + where(op));
        started[op.other] = handle;
        break;
      }
      case OpKind::kJoin:
        if (job_.layout.os_threads) {
          started_os.at(op.other).join();
        } else {
          lmdx_join_thread(started.at(op.other));
        }
        break;
    }
  }
}

void* ThreadEntry(void* argument) {
  const auto code = reinterpret_cast<std::uintptr_t>(argument);
  std::shared_ptr<const Program> program = ProgramAt(static_cast<int>(code >> 16));
  RunThread(*program, static_cast<int>((code >> 8) & 0xFF), static_cast<int>(code & 0xFF));
  return nullptr;
}

Options Parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Fail("flag " + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--seed") {
      options.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--protocol") {
      options.protocol = value;
    } else if (flag == "--programs") {
      options.programs = std::atoi(value.c_str());
    } else if (flag == "--oracle") {
      options.oracle = value;
    } else {
      Fail("unknown flag " + flag + " (--seed, --protocol, --programs, --oracle)");
    }
  }
  if (options.protocol.empty() || options.oracle.empty() || options.programs <= 0) {
    Fail("usage: drf_fuzz --seed S --protocol P --programs K --oracle FILE");
  }
  return options;
}

int Run(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  job_.options = Parse(argc, argv);
  try {
    job_.layout = MakeLayout(job_.options.seed, job_.options.protocol, job_.options.programs);
  } catch (const std::exception& error) {
    Fail(error.what());
  }
  const Layout& layout = job_.layout;
  if (lmdx_size() != layout.nodes) {
    Fail("this seed's layout has " + std::to_string(layout.nodes) + " nodes; run it with -n " +
         std::to_string(layout.nodes));
  }
  std::size_t image_bytes = 0;
  for (const Variable& variable : layout.variables) {
    const std::size_t bytes = variable.pages * kPageBytes;
    void* base = lmdx_shared_var(variable.name.c_str(), bytes);
    if (base == nullptr) Fail("lmdx_shared_var " + variable.name);
    job_.bases.push_back(static_cast<std::byte*>(base));
    job_.image_at.push_back(image_bytes);
    image_bytes += bytes;
  }
  try {
    job_.oracle = std::make_unique<Oracle>(job_.options.oracle, image_bytes);
  } catch (const std::exception& error) {
    Fail(error.what());
  }
  int threads = 0;
  for (int count : layout.threads_per_node) threads += count;
  // Every semaphore between two threads, each made by one rank.
  for (int from = 0; from < threads; ++from) {
    for (int to = 0; to < threads; ++to) {
      if (from != to && (from * threads + to) % lmdx_size() == lmdx_rank()) {
        Ok(lmdx_sema_init(SemaphoreName(from, to).c_str(), 0), "lmdx_sema_init");
      }
    }
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  for (int index = 0; index < layout.programs; ++index) {
    std::shared_ptr<const Program> program = ProgramAt(index);
    for (int round = 0; round < static_cast<int>(program->rounds.size()); ++round) {
      // Before this main starts a thread that may arrive at the round's barrier.
      Ok(lmdx_barrier_init(BarrierName(index, round).c_str(),
                           static_cast<int>(program->rounds[round].threads.size())),
         "lmdx_barrier_init");
      RunThread(*program, round, lmdx_rank());
    }
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (lmdx_rank() == 0) {
    std::printf("verified: seed %" PRIu64 ", %d programs, %" PRIu64 " reads on rank 0\n",
                job_.options.seed, layout.programs, job_.reads.load());
    std::fflush(stdout);
  }
  lmdx_finalize();
  return 0;
}

}  // namespace
}  // namespace lmdx::drf

int main(int argc, char** argv) { return lmdx::drf::Run(argc, argv); }
