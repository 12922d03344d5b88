// Random data-race-free programs over LMDX's shared memory, for the DRF fuzzer (docs/protocols.md,
// "Checking the protocols").
//
// A job (one seed) has a layout: its nodes, its LMDX threads per node, and a few shared variables
// of 1 to 3 pages, or 8 to 32, under protocols and home distributions of their own. It runs a
// sequence of programs over that layout. A program is a few rounds; in each round every node's main
// thread starts the round's other threads (on its own node or another), all threads run their
// operations, the mains join what they started and meet at lmdx_barrier_all.
//
// The operations of a round are drawn as one global sequence, a schedule that could run as it is.
// Every location (a word or a single byte, several per page, so that pages are falsely shared) is
// in one of three modes for the round: owned by one thread, which alone reads and writes it;
// read-only for every thread; or guarded by a lock, read and written only while holding it.
// Ownership moves only along happens-before: a semaphore V to a P, a lock released to a thread
// that was told (by a V) that the lock was held and locks it next, a thread's start and end, a
// named barrier of every thread, and lmdx_barrier_all among the mains. So every program is free of
// data races in every execution, and each read has one right value: the last write before it in
// happens-before, which the oracle (oracle.h) holds.
//
// The rules that keep every execution from deadlocking, whatever its order: a blocking operation
// (lock, P, barrier, join) is enabled by operations earlier in the global sequence (the P's of a
// pair of threads match its V's in order); no thread waits inside a critical section, except a
// main that holds a lock across lmdx_barrier_all, and then no other thread asked for that lock
// earlier in the round (so nobody can hold it waiting for that barrier).
#ifndef LMDX_TESTS_CONSISTENCY_DRF_PROGRAM_H_
#define LMDX_TESTS_CONSISTENCY_DRF_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lmdx::drf {

constexpr std::size_t kPageBytes = 4096;
constexpr int kMaxThreadsPerNode = 3;

struct Variable {
  std::string name;      // fz_v0, fz_v1, ...
  std::size_t pages;     // its size
  std::string protocol;  // "sc", "update", "rc", "lrc" or "hlrc"
  std::string home;      // "BLOCK", "CYCLIC" or "FIRST_TOUCH"
};

// What a seed fixes for the whole job.
struct Layout {
  std::uint64_t seed = 0;
  int nodes = 2;
  std::vector<int> threads_per_node;  // 1 to kMaxThreadsPerNode, the main included
  // The threads beside each main are OS threads its own main starts and joins (std::thread),
  // running truly in parallel in the node's process, rather than LMDX threads started from any
  // node (user-level threads of the node they run on).
  bool os_threads = false;
  std::vector<Variable> variables;
  int programs = 1;
  // The job's configuration file (protobuf text format) that gives each variable its protocol
  // and home.
  std::string ConfigText() const;
};

// protocol: one of sc, update, rc, lrc, hlrc for every variable, or "mixed" for one each.
Layout MakeLayout(std::uint64_t seed, const std::string& protocol, int programs);

struct Location {
  int variable;
  std::size_t offset;  // in bytes, from the variable's start
  int bytes;           // 8 (aligned) or 1
};

enum class OpKind : std::uint8_t {
  kRead,        // plain load
  kWrite,       // plain store
  kGet,         // lmdx_get
  kPut,         // lmdx_put
  kLock,        // lmdx_lock(lock name)
  kUnlock,      // lmdx_unlock
  kSemaV,       // lmdx_sema_v(the semaphore from this thread to `other`)
  kSemaP,       // lmdx_sema_p(the semaphore from `other` to this thread)
  kBarrier,     // a named barrier of every thread of the round
  kBarrierAll,  // lmdx_barrier_all: the mains only
  kStart,       // a main starts thread `other`
  kJoin,        // a main joins thread `other`
};

const char* OpName(OpKind kind);

struct Op {
  OpKind kind;
  int thread;               // who runs it (an index into Round::threads)
  int location = -1;        // reads and writes
  std::uint64_t value = 0;  // writes
  int lock = -1;            // locks
  int other = -1;           // semaphores, start and join: the other thread
  std::uint32_t step = 0;   // its place in the round's global sequence
};

struct Thread {
  int node;
  bool main;         // the node's main thread (runs on `node`, started by nobody)
  int starter = -1;  // the main that starts it (any node's)
};

struct Round {
  std::vector<Thread> threads;  // the mains first, one per node in rank order
  std::vector<Op> ops;          // the global sequence
  // The operations of one thread, in its order (indices into ops).
  std::vector<std::vector<std::uint32_t>> per_thread;
};

struct Program {
  std::uint64_t seed = 0;
  int index = 0;  // within the job
  std::vector<Location> locations;
  std::vector<Round> rounds;
  int locks = 0;
};

// The index-th program of the job laid out by `layout`: the same on every node.
Program MakeProgram(const Layout& layout, int index);

// "thread 4 (node 1, an LMDX thread started by node 0's main)" or "thread 0 (node 0, its main
// thread)".
std::string DescribeThread(const Layout& layout, const Round& round, int thread);

// The semaphore, lock and barrier names a program uses.
std::string SemaphoreName(int from, int to);
std::string LockName(int lock);
// A barrier of one round's threads: its own name, as a named barrier's participants are the threads
// of its first round.
std::string BarrierName(int program, int round);

}  // namespace lmdx::drf

#endif  // LMDX_TESTS_CONSISTENCY_DRF_PROGRAM_H_
