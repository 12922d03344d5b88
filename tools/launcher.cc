#include "tools/launcher.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "net/bootstrap_env.h"
#include "tools/exit_status.h"
#include "tools/line_forwarder.h"
#include "tools/node_process.h"
#include "tools/output.h"

extern char** environ;

namespace lmdx::tools {
namespace {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;

// The launcher's environment without the variables it sets itself, so a job started from inside
// another job's node does not carry two values of LMDX_RANK.
std::vector<std::string> BaseEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> own = {net::env::kRank, net::env::kSize};
  for (const std::string& entry : overrides) own.push_back(entry.substr(0, entry.find('=')));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    if (std::find(own.begin(), own.end(), name) == own.end()) env.emplace_back(entry);
  }
  return env;
}

// What may explain a node that joined the job and was killed by SIGSEGV or SIGBUS. Its fault
// handler names what it can (an access in the shared range but in no variable), but a thread that
// blocks the signal carrying its faults on shared memory (SIGSEGV under mprotect, SIGBUS under
// userfaultfd) is killed by the kernel before any handler runs: only this line can still point at
// it (docs/dsm.md, "Outside the guarantee").
std::string FaultSignalHint(const ExitStatus& status) {
  if (!status.signaled || (status.value != SIGSEGV && status.value != SIGBUS)) return "";
  std::string name = SignalName(status.value);
  return " (if nothing above says why: a thread that blocks " + name +
         " is killed so when it touches LMDX shared memory; see docs/dsm.md)";
}

std::string SecondsText(std::chrono::milliseconds ms) {
  std::ostringstream out;
  out << static_cast<double>(ms.count()) / 1000.0;
  return out.str();
}

// Ignores SIGPIPE while the launcher forwards output: a reader that goes away (`| head`) must not
// kill the launcher and orphan the job.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &previous_, nullptr); }

 private:
  struct sigaction previous_ = {};
};

// One output stream of one node: its pipe, and where its lines go.
struct Stream {
  Fd* pipe;
  LineForwarder forwarder;
};

struct Node {
  explicit Node(NodeProcess p) : process(std::move(p)) {}
  NodeProcess process;
  std::vector<Stream> streams;
};

// The state of one running job and its single poll loop.
class Job {
 public:
  Job(const LaunchSpec& spec, SignalWatch& signals, const LaunchTimings& timings)
      : spec_(spec), signals_(signals), timings_(timings) {}

  int Run() {
    Start();
    while (AnyRunning() || AnyStreamOpen()) {
      if (!AnyRunning() && !drain_deadline_) drain_deadline_ = Clock::now() + timings_.drain;
      WaitForEvents();
      CheckDeadlines(Clock::now());
    }
    return Finish();
  }

 private:
  void Start() {
    std::vector<std::string> base = BaseEnvironment(spec_.job_env);
    std::vector<std::string> argv = {spec_.program};
    argv.insert(argv.end(), spec_.args.begin(), spec_.args.end());
    nodes_.reserve(static_cast<std::size_t>(spec_.nodes));
    for (int rank = 0; rank < spec_.nodes; ++rank) {
      NodeSpawn spawn;
      spawn.program = spec_.program;
      spawn.argv = argv;
      spawn.env = base;
      spawn.env.insert(spawn.env.end(), spec_.job_env.begin(), spec_.job_env.end());
      spawn.env.push_back(std::string(net::env::kRank) + "=" + std::to_string(rank));
      spawn.env.push_back(std::string(net::env::kSize) + "=" + std::to_string(spec_.nodes));
      // Like mpirun: the terminal's input goes to rank 0 only.
      spawn.inherit_stdin = rank == 0;
      spawn.child_mask = &signals_.previous_mask();
      // A node is a unique_ptr so that its Streams may point at its pipes.
      auto node = std::make_unique<Node>(NodeProcess::Spawn(spawn));
      std::string prefix = spec_.tag_output ? "[" + std::to_string(rank) + "] " : "";
      node->streams.push_back({&node->process.stdout_pipe(),
                               LineForwarder(prefix, [this](std::string_view s) { Out(1, s); })});
      node->streams.push_back({&node->process.stderr_pipe(),
                               LineForwarder(prefix, [this](std::string_view s) { Out(2, s); })});
      nodes_.push_back(std::move(node));
    }
    if (spec_.timeout) job_deadline_ = Clock::now() + *spec_.timeout;
    if (spec_.join_timeout && spec_.watch != nullptr) {
      join_deadline_ = Clock::now() + *spec_.join_timeout;
    }
  }

  void Out(int fd, std::string_view text) {
    bool& broken = fd == 1 ? stdout_broken_ : stderr_broken_;
    if (!broken && !WriteAll(fd, text)) broken = true;
  }

  bool AnyRunning() const {
    return std::any_of(nodes_.begin(), nodes_.end(),
                       [](const auto& n) { return n->process.running(); });
  }

  bool AnyStreamOpen() const {
    for (const auto& n : nodes_) {
      for (const Stream& s : n->streams) {
        if (s.pipe->valid()) return true;
      }
    }
    return false;
  }

  // Milliseconds until the nearest deadline, rounded up so poll never returns early and spins;
  // -1 (wait for an event) when there is none.
  int PollTimeout() const {
    Deadline next;
    for (const Deadline& d :
         {job_deadline_, join_deadline_, stop_deadline_, kill_deadline_, drain_deadline_}) {
      if (d && (!next || *d < *next)) next = d;
    }
    if (!next) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now());
    return static_cast<int>(std::clamp<long long>(left.count(), 0, 60'000));
  }

  void WaitForEvents() {
    std::vector<pollfd> fds;
    std::vector<Stream*> owners;
    fds.push_back({signals_.fd(), POLLIN, 0});
    owners.push_back(nullptr);
    for (auto& n : nodes_) {
      for (Stream& s : n->streams) {
        if (!s.pipe->valid()) continue;
        fds.push_back({s.pipe->get(), POLLIN, 0});
        owners.push_back(&s);
      }
    }
    int ready = ::poll(fds.data(), fds.size(), PollTimeout());
    if (ready < 0) {
      if (errno == EINTR) return;
      ThrowSystemError("poll", errno, LMDX_ERR_INTERNAL);
    }
    if (fds[0].revents != 0) HandleSignals();
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) ReadStream(*owners[i]);
    }
  }

  void ReadStream(Stream& stream) {
    std::array<char, 64 * 1024> buffer;
    ssize_t n = ::read(stream.pipe->get(), buffer.data(), buffer.size());
    if (n > 0) {
      stream.forwarder.Feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      stream.forwarder.Finish();
      stream.pipe->reset();
    }
  }

  void HandleSignals() {
    std::vector<int> pending = signals_.ReadPending();
    // Stop requests first: a Ctrl-C at the terminal also reaches the nodes (same process group),
    // and their deaths must then count as the stop, not as failures.
    for (int sig : pending) {
      if (sig == SIGCHLD) continue;
      if (sig == SIGQUIT) {
        // Not a stop: rank 0 prints what every thread of the job waits for (net/hang_watch.h).
        if (!nodes_.empty() && nodes_[0]->process.running()) nodes_[0]->process.Signal(SIGQUIT);
        continue;
      }
      if (stop_signal_) {
        KillRunning();  // asked twice: do not wait for the grace period
      } else {
        stop_signal_ = sig;
        BeginStop();
      }
    }
    for (std::size_t rank = 0; rank < nodes_.size(); ++rank) {
      if (nodes_[rank]->process.TryReap()) OnNodeEnded(static_cast<int>(rank));
    }
  }

  void OnNodeEnded(int rank) {
    const ExitStatus& status = *nodes_[static_cast<std::size_t>(rank)]->process.status();
    JobWatch::NodeState state = JobWatch::NodeState::kNotJoined;
    if (spec_.watch != nullptr) {
      state = spec_.watch->StateAfterExit(rank);
      spec_.watch->NodeGone(rank);
    }
    if (stopping_) return;
    if (state == JobWatch::NodeState::kJoined && !status.signaled) {
      // It joined and left without announcing its end: the others may wait for it for ever.
      if (!failed_rank_) {
        failed_rank_ = rank;
        failure_detail_ = " before the job ended";
      }
      // Not at once: it may have left because a peer died, and that peer's death, seen by the
      // node through a closed socket before the kernel reports it to the launcher, is the cause.
      StopBy(Clock::now() + timings_.cause_settle);
      return;
    }
    if (status.success()) return;
    if (status.signaled) {
      // Nobody has been signalled by the launcher yet, so this death is the node's own; a node
      // that exited with a status before it may only have reacted to it.
      if (!failed_rank_ || !StatusOf(*failed_rank_).signaled) {
        failed_rank_ = rank;
        failure_detail_.clear();
        failure_hint_ =
            state == JobWatch::NodeState::kNotJoined ? std::string() : FaultSignalHint(status);
      }
      BeginStop();
      return;
    }
    if (!failed_rank_) failed_rank_ = rank;
    if (state != JobWatch::NodeState::kLeft) {
      // A node that ended in order with a non-zero status (threads style: rank 0's) does not
      // stop the others; any other failure gives them a moment to end on their own first.
      StopBy(Clock::now() + timings_.exit_grace);
    }
  }

  // The job stops at `when` unless an earlier stop is due.
  void StopBy(Clock::time_point when) {
    if (!stop_deadline_ || when < *stop_deadline_) stop_deadline_ = when;
  }

  void BeginStop() {
    if (stopping_) return;
    stopping_ = true;
    stop_deadline_.reset();
    stopped_running_nodes_ = AnyRunning();
    for (auto& n : nodes_) n->process.Signal(SIGTERM);
    if (stopped_running_nodes_) kill_deadline_ = Clock::now() + timings_.kill_after;
  }

  void KillRunning() {
    for (auto& n : nodes_) n->process.Signal(SIGKILL);
    kill_deadline_.reset();
  }

  void CheckDeadlines(Clock::time_point now) {
    if (job_deadline_ && now >= *job_deadline_) {
      job_deadline_.reset();
      if (!stopping_) {
        timed_out_ = true;
        BeginStop();
      }
    }
    if (join_deadline_ && now >= *join_deadline_) {
      join_deadline_.reset();
      CheckEveryNodeJoined();
    }
    if (stop_deadline_ && now >= *stop_deadline_) BeginStop();
    if (kill_deadline_ && now >= *kill_deadline_) KillRunning();
    if (drain_deadline_ && now >= *drain_deadline_) {
      // A node's own child still holds the pipe; what it writes later is dropped.
      for (auto& n : nodes_) {
        for (Stream& s : n->streams) {
          if (!s.pipe->valid()) continue;
          s.forwarder.Finish();
          s.pipe->reset();
        }
      }
    }
  }

  // The lowest rank still running that has not joined is named; the rest are stopped with it.
  void CheckEveryNodeJoined() {
    if (stopping_) return;
    for (std::size_t rank = 0; rank < nodes_.size(); ++rank) {
      int r = static_cast<int>(rank);
      if (!nodes_[rank]->process.running() || spec_.watch->HasJoined(r)) continue;
      not_joined_rank_ = r;
      BeginStop();
      return;
    }
  }

  const ExitStatus& StatusOf(int rank) const {
    return *nodes_[static_cast<std::size_t>(rank)]->process.status();
  }

  int Report(const std::string& line, int code) {
    Out(2, "lmdx run: " + line + "\n");
    return code;
  }

  int Finish() {
    if (not_joined_rank_) {
      return Report("rank " + std::to_string(*not_joined_rank_) + " did not join the job within " +
                        SecondsText(*spec_.join_timeout) +
                        " s (it has not called lmdx_init; --join-timeout sets the limit, 0 "
                        "waits for ever); the job was stopped",
                    1);
    }
    if (timed_out_) {
      return Report("the job did not finish within " + SecondsText(*spec_.timeout) + " s; stopped",
                    124);
    }
    if (failed_rank_) {
      int rank = *failed_rank_;
      std::string suffix = "; the job was stopped";
      if (!stopped_running_nodes_) {
        // Every node ended on its own: rank 0's status is the job's when it failed, unless a
        // node was killed by a signal, which the others' statuses may only follow from.
        suffix.clear();
        if (!StatusOf(rank).signaled && !StatusOf(0).success()) rank = 0;
      }
      const ExitStatus& status = StatusOf(rank);
      std::string detail = rank == *failed_rank_ ? failure_detail_ : "";
      std::string hint = rank == *failed_rank_ ? failure_hint_ : "";
      return Report(
          "rank " + std::to_string(rank) + " " + status.Describe() + detail + suffix + hint,
          status.ShellCode() != 0 ? status.ShellCode() : 1);
    }
    if (stop_signal_) {
      return Report("received " + SignalName(*stop_signal_) + "; the job was stopped",
                    128 + *stop_signal_);
    }
    return 0;
  }

  const LaunchSpec& spec_;
  SignalWatch& signals_;
  const LaunchTimings& timings_;
  std::vector<std::unique_ptr<Node>> nodes_;

  bool stopping_ = false;
  bool stopped_running_nodes_ = false;
  bool timed_out_ = false;
  bool stdout_broken_ = false;
  bool stderr_broken_ = false;
  std::optional<int> stop_signal_;
  std::optional<int> failed_rank_;
  std::optional<int> not_joined_rank_;
  std::string failure_detail_;  // appended to the failed rank's exit, e.g. " before the job ended"
  std::string failure_hint_;    // after the whole line: what may explain a node's fatal fault
  Deadline job_deadline_;
  Deadline join_deadline_;
  Deadline stop_deadline_;  // a failure's grace or settle time (StopBy), then BeginStop
  Deadline kill_deadline_;
  Deadline drain_deadline_;
};

}  // namespace

int RunJob(const LaunchSpec& spec, SignalWatch& signals, const LaunchTimings& timings) {
  IgnoreSigpipe ignore_sigpipe;
  Job job(spec, signals, timings);
  return job.Run();
}

}  // namespace lmdx::tools
