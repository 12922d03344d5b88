// What lies outside the DSM's guarantee (docs/dsm.md, "Outside the guarantee"), one scenario per
// run (argv[1]): a child of fork() that touches shared memory or calls LMDX, a child that exits
// through exit(), fork followed by exec, and threads that block SIGSEGV and SIGBUS. Rank 0 prints
// "verified: SCENARIO on N nodes" when the job survived as it should; what the children and the
// runtime said is in the output for the test to read.
#include <lmdx/lmdx.h>

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

extern char** environ;

namespace {

int rank_ = -1;
int size_ = 0;

[[noreturn]] void Die(const std::string& what) {
  std::string text = "rank " + std::to_string(rank_) + ": FAILED: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Check(bool ok, const std::string& what) {
  if (!ok) Die(what);
}

void Barrier() {
  if (lmdx_barrier_all() != LMDX_OK) Die("lmdx_barrier_all");
}

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// How a child ended, as "exited with status N" or "was killed by signal N".
std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Forks; the child runs child() and leaves with _exit(0) if it returns; the parent waits and says
// how the child ended.
template <typename Child>
void ForkAndWait(Child child) {
  pid_t pid = ::fork();
  Check(pid >= 0, "fork");
  if (pid == 0) {
    child();
    std::fflush(stdout);
    ::_exit(0);
  }
  int status = 0;
  Check(::waitpid(pid, &status, 0) == pid, "waitpid");
  Say("rank " + std::to_string(rank_) + ": the child of fork() " + HowItEnded(status));
}

// A child of fork() reads or writes a shared word its parent holds a valid copy of. It must not
// see the parent's pages, nor write them behind the protocol's back, nor run the protocol on the
// parent's connections: its touch ends it with a line naming fork, and the word stays as it was.
void ForkTouch(bool write) {
  auto* word = static_cast<volatile std::uint64_t*>(lmdx_shared_var("fork_word", 8));
  Check(word != nullptr, "lmdx_shared_var");
  if (rank_ == 0) *word = 41;
  Barrier();
  if (rank_ == size_ - 1) {
    Check(*word == 41, "the word before fork");  // the parent's copy is valid now
    ForkAndWait([&] {
      if (write) {
        *word = 999;
      } else {
        Say("child of rank " + std::to_string(rank_) + " read " + std::to_string(*word));
      }
      Say("child of rank " + std::to_string(rank_) + " touched shared memory and went on");
    });
  }
  Barrier();
  Check(*word == 41, "the word after the child's touch reads " + std::to_string(*word));
  Barrier();
}

// A child of fork() that calls LMDX gets an error naming fork: in LMDX_ERRORS_RETURN mode as a
// code and a message, in the default mode as a line and the end of the child. None of its calls
// reach the other nodes (the barriers around the fork would miscount).
void ForkCall() {
  Barrier();
  if (rank_ == size_ - 1) {
    ForkAndWait([] {
      lmdx_set_error_mode(LMDX_ERRORS_RETURN);
      int code = lmdx_barrier_all();
      Say(std::string("child: lmdx_barrier_all returned ") + lmdx_strerror(code) + ": " +
          lmdx_last_error_message());
      char byte = 'x';
      code = lmdx_send(0, &byte, 1);
      Say(std::string("child: lmdx_send returned ") + lmdx_strerror(code) + ": " +
          lmdx_last_error_message());
      void* shared = lmdx_shared_var("fork_call", 8);
      Say(std::string("child: lmdx_shared_var returned ") +
          (shared == nullptr ? "null" : "memory") + ": " + lmdx_last_error_message());
      lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
      lmdx_send(0, &byte, 1);
      Say("child: survived a fatal lmdx_send");
    });
  }
  Barrier();
  auto* word = static_cast<std::uint64_t*>(lmdx_shared_var("fork_call", 8));
  Check(word != nullptr, "lmdx_shared_var after the fork");
  Barrier();
}

// A child of fork() that leaves through exit() (its atexit handlers and destructors run) leaves
// the job alone: the parent goes on, and so does the job.
void ForkExit() {
  auto* counts = static_cast<std::uint64_t*>(lmdx_shared_var("fork_exit", 8 * 64));
  Check(counts != nullptr, "lmdx_shared_var");
  Barrier();
  if (rank_ == size_ - 1) {
    ForkAndWait([] {
      Say("child: leaving through exit(0)");
      std::exit(0);
    });
  }
  counts[rank_] = static_cast<std::uint64_t>(rank_) + 1;
  Barrier();
  for (int r = 0; r < size_; ++r) {
    Check(counts[r] == static_cast<std::uint64_t>(r) + 1, "rank " + std::to_string(r) + "'s count");
  }
  Barrier();
}

// The same in the threads style, where only rank 0 runs main: a child of rank 0 leaving through
// exit() must not end the job, which rank 0's exit does. An LMDX thread on the last rank then
// proves the job is still there.
void* AddOne(void* arg) {
  auto* word = static_cast<std::uint64_t*>(arg);
  ++*word;
  return nullptr;
}

void ForkExitThreads() {
  auto* word = static_cast<std::uint64_t*>(lmdx_shared_var("fork_exit_threads", 8));
  Check(word != nullptr, "lmdx_shared_var");
  *word = 1;
  ForkAndWait([] {
    Say("child: leaving through exit(0)");
    std::exit(0);
  });
  lmdx_join_thread(lmdx_start_thread_on(size_ - 1, &AddOne, word));
  Check(*word == 2, "the word after the LMDX thread reads " + std::to_string(*word));
}

// fork followed by exec, as system(), popen() and posix_spawn() do it, keeps working: the new
// program owes nothing to the node.
void ForkExec() {
  std::string me = "rank " + std::to_string(rank_) + ": ";
  int status = std::system("exit 3");
  Check(WIFEXITED(status) && WEXITSTATUS(status) == 3, "system: " + HowItEnded(status));

  FILE* pipe = ::popen("echo popen-works", "r");
  Check(pipe != nullptr, "popen");
  char line[64] = {};
  Check(std::fgets(line, sizeof line, pipe) != nullptr, "popen's line");
  Check(std::strcmp(line, "popen-works\n") == 0, std::string("popen read ") + line);
  status = ::pclose(pipe);
  Check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pclose: " + HowItEnded(status));

  pid_t pid = 0;
  char sh[] = "/bin/sh";
  char dash_c[] = "-c";
  char exit5[] = "exit 5";
  char* spawn_argv[] = {sh, dash_c, exit5, nullptr};
  Check(::posix_spawn(&pid, sh, nullptr, nullptr, spawn_argv, environ) == 0, "posix_spawn");
  Check(::waitpid(pid, &status, 0) == pid, "waitpid after posix_spawn");
  Check(WIFEXITED(status) && WEXITSTATUS(status) == 5, "posix_spawn: " + HowItEnded(status));

  pid = ::fork();
  Check(pid >= 0, "fork");
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", "exit 7", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Check(::waitpid(pid, &status, 0) == pid, "waitpid after fork and exec");
  Check(WIFEXITED(status) && WEXITSTATUS(status) == 7, "fork and exec: " + HowItEnded(status));
  Say(me + "system, popen, posix_spawn and fork+exec all worked");
  Barrier();
}

void BlockFaultSignals(sigset_t* previous = nullptr) {
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  Check(::pthread_sigmask(SIG_BLOCK, &faults, previous) == 0, "pthread_sigmask");
}

// A thread of the last rank blocks SIGSEGV and SIGBUS, then asks LMDX for a variable whose page
// another node holds and touches it: the kernel kills the node, and the runtime has said why
// beforehand, at the call.
void BlockedTouch() {
  auto* word = static_cast<volatile std::uint64_t*>(lmdx_shared_var("blocked_word", 8));
  Check(word != nullptr, "lmdx_shared_var");
  if (rank_ == 0) *word = 5;
  Barrier();
  if (rank_ == size_ - 1) {
    std::thread([] {
      BlockFaultSignals();
      auto* mine = static_cast<volatile std::uint64_t*>(lmdx_shared_var("blocked_word", 8));
      Say("rank " + std::to_string(rank_) +
          " touches shared memory with SIGSEGV and SIGBUS blocked");
      Say("read " + std::to_string(*mine));
    }).join();
    Die("survived a touch of shared memory with its fault signals blocked");
  }
  Barrier();
}

// The same with no LMDX call between the block and the touch: only the launcher's report can say
// what may have happened.
void BlockedTouchSilently() {
  auto* word = static_cast<volatile std::uint64_t*>(lmdx_shared_var("blocked_word", 8));
  Check(word != nullptr, "lmdx_shared_var");
  if (rank_ == 0) *word = 5;
  Barrier();
  if (rank_ == size_ - 1) {
    std::thread([word] {
      BlockFaultSignals();
      Say("read " + std::to_string(*word));
    }).join();
    Die("survived a touch of shared memory with its fault signals blocked");
  }
  Barrier();
}

// main blocked SIGSEGV and SIGBUS before lmdx_init_spmd (see main below), so every thread it
// creates inherits the mask: LMDX's own threads still serve faults, since the runtime runs them
// with the fault signals open.
void BlockedAtInit() {
  auto* words = static_cast<std::uint64_t*>(lmdx_shared_var("blocked_at_init", 8 * 64));
  Check(words != nullptr, "lmdx_shared_var");
  lmdx_thread_t thread = lmdx_start_thread_on(rank_, &AddOne, &words[rank_]);
  Check(thread != LMDX_THREAD_INVALID, "lmdx_start_thread_on");
  lmdx_join_thread(thread);
  Barrier();
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  Check(::pthread_sigmask(SIG_UNBLOCK, &faults, nullptr) == 0, "pthread_sigmask");
  for (int r = 0; r < size_; ++r) Check(words[r] == 1, "rank " + std::to_string(r) + "'s word");
  Barrier();
}

bool ThreadsStyle(const std::string& scenario) { return scenario == "fork_exit_threads"; }

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "blocked_at_init") BlockFaultSignals();
  if (ThreadsStyle(scenario)) {
    lmdx_init(&argc, &argv);  // returns on rank 0 only
  } else {
    lmdx_init_spmd(&argc, &argv);
  }
  rank_ = lmdx_rank();
  size_ = lmdx_size();
  if (scenario == "fork_read") {
    ForkTouch(false);
  } else if (scenario == "fork_write") {
    ForkTouch(true);
  } else if (scenario == "fork_call") {
    ForkCall();
  } else if (scenario == "fork_exit") {
    ForkExit();
  } else if (scenario == "fork_exit_threads") {
    ForkExitThreads();
  } else if (scenario == "fork_exec") {
    ForkExec();
  } else if (scenario == "blocked_touch") {
    BlockedTouch();
  } else if (scenario == "blocked_touch_silently") {
    BlockedTouchSilently();
  } else if (scenario == "blocked_at_init") {
    BlockedAtInit();
  } else {
    Die("unknown scenario '" + scenario + "'");
  }
  if (rank_ == 0) Say("verified: " + scenario + " on " + std::to_string(size_) + " nodes");
  if (!ThreadsStyle(scenario)) lmdx_finalize();
  return 0;
}
