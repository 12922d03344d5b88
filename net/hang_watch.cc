#include "net/hang_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "net/node.h"
#include "net/wait_board.h"
#include "net/wire.pb.h"

namespace lmdx::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The eventfd SIGQUIT pokes; -1 when no watch takes the signal.
std::atomic<int> sigquit_fd{-1};

void OnSigquit(int) {
  int saved = errno;  // a handler must leave errno as it found it
  int fd = sigquit_fd.load(std::memory_order_relaxed);
  std::uint64_t one = 1;
  if (fd >= 0) [[maybe_unused]]
    ssize_t n = ::write(fd, &one, sizeof one);
  errno = saved;
}

bool SigquitIsDefault() {
  struct sigaction current = {};
  return ::sigaction(SIGQUIT, nullptr, &current) == 0 && current.sa_handler == SIG_DFL &&
         (current.sa_flags & SA_SIGINFO) == 0;
}

wire::WaitReport OwnReport() {
  wait_board::Snapshot snapshot = wait_board::Take();
  wire::WaitReport report;
  report.set_quiet_ms(snapshot.quiet.count());
  report.set_program_threads(static_cast<std::uint32_t>(snapshot.program_threads));
  report.set_waiting(static_cast<std::uint32_t>(snapshot.waiting));
  for (std::string& line : snapshot.lines) report.add_lines(std::move(line));
  return report;
}

std::mutex hint_mutex;
std::string& Hint() {
  static std::string hint;
  return hint;
}

std::string DeadlockHint() {
  std::lock_guard lock(hint_mutex);
  return Hint();
}

}  // namespace

HangWatch::Options HangWatch::Options::FromEnvironment() {
  Options options;
  if (const char* after = std::getenv("LMDX_DEADLOCK_AFTER"); after != nullptr && *after != 0) {
    std::string_view text(after);
    double seconds = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
        seconds < 0 || seconds > 1e9) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "LMDX_DEADLOCK_AFTER needs a number of seconds (0 for never), not '" +
                      std::string(text) + "'");
    }
    options.after = milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
  }
  if (const char* action = std::getenv("LMDX_DEADLOCK_ACTION"); action != nullptr && *action) {
    std::string text(action);
    if (text != "end" && text != "warn") {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "LMDX_DEADLOCK_ACTION needs 'end' or 'warn', not '" + text + "'");
    }
    options.end_job = text == "end";
  }
  return options;
}

void HangWatch::RegisterHandler(Node& node) {
  node.Handle(MessageType::kWaitReport, [&node](InboundMessage&, const ReplyTo* reply_to) {
    if (reply_to != nullptr) node.Reply(*reply_to, OwnReport().SerializeAsString());
  });
}

void SetDeadlockHint(std::string hint) {
  std::lock_guard lock(hint_mutex);
  Hint() = std::move(hint);
}

void IgnoreSigquitUnlessHandled() {
  if (!SigquitIsDefault()) return;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGQUIT, &ignore, nullptr);
}

class HangWatch::Impl {
 public:
  Impl(Node& node, Options options) : node_(node), options_(options) {
    stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    quit_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_fd_ || !quit_fd_) ThrowSystemError("eventfd", errno, LMDX_ERR_INTERNAL);
    if (SigquitIsDefault()) {
      sigquit_fd.store(quit_fd_.get());
      struct sigaction take = {};
      take.sa_handler = OnSigquit;
      take.sa_flags = SA_RESTART;
      ::sigemptyset(&take.sa_mask);
      took_sigquit_ = ::sigaction(SIGQUIT, &take, &previous_) == 0;
      if (!took_sigquit_) sigquit_fd.store(-1);
    }
    thread_ = std::thread([this] { Run(); });
  }

  ~Impl() {
    Stop();
    if (thread_.joinable()) thread_.join();
    if (took_sigquit_) {
      // The fd first: a handler running meanwhile must not write into a number reused later.
      sigquit_fd.store(-1);
      ::sigaction(SIGQUIT, &previous_, nullptr);
    }
  }

  void Stop() {
    stopping_.store(true, std::memory_order_release);
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_.get(), &one, sizeof one);
  }

 private:
  // Wakes a few times per period at most, and not at all when only SIGQUIT can ask.
  int PollTimeoutMs() const {
    if (options_.after.count() == 0) return -1;
    milliseconds period =
        std::clamp<milliseconds>(options_.after / 4, milliseconds(50), milliseconds(5000));
    return static_cast<int>(period.count());
  }

  void Run() {
    bool reported_this_spell = false;
    std::optional<Clock::time_point> last_on_request;
    for (;;) {
      pollfd fds[2] = {{stop_fd_.get(), POLLIN, 0}, {quit_fd_.get(), POLLIN, 0}};
      int ready = ::poll(fds, 2, PollTimeoutMs());
      if (stopping_.load(std::memory_order_acquire)) return;
      if (ready < 0 && errno != EINTR) return;
      if (ready > 0 && fds[1].revents != 0) {
        std::uint64_t count = 0;
        [[maybe_unused]] ssize_t n = ::read(quit_fd_.get(), &count, sizeof count);
        // Ctrl-\ reaches rank 0 twice under `lmdx run` (from the terminal and from the
        // launcher): one report.
        auto now = Clock::now();
        if (!last_on_request || now - *last_on_request > std::chrono::seconds(1)) {
          last_on_request = now;
          if (auto reports = Gather()) {
            Print("lmdx: what every thread of the job waits for (SIGQUIT; the job goes on):",
                  *reports);
          }
        }
        continue;
      }
      if (options_.after.count() == 0) continue;
      if (wait_board::Take().quiet < options_.after) {
        reported_this_spell = false;
        continue;
      }
      if (reported_this_spell) continue;
      std::optional<std::vector<wire::WaitReport>> reports = Gather();
      if (!reports) continue;
      bool all_quiet = std::all_of(reports->begin(), reports->end(), [&](const auto& r) {
        return milliseconds(r.quiet_ms()) >= options_.after;
      });
      if (!all_quiet) continue;
      std::string header = "lmdx: deadlock: every thread of every node has waited in LMDX for " +
                           SecondsText(options_.after) + " or more with no message moving:";
      Print(header, *reports);
      if (std::string hint = DeadlockHint(); !hint.empty()) Say("lmdx: deadlock: " + hint + "\n");
      if (options_.end_job) {
        Say("lmdx: deadlock: the job ends (LMDX_DEADLOCK_ACTION=warn only warns; "
            "LMDX_DEADLOCK_AFTER=0 never looks)\n");
        ::_exit(kDeadlockStatus);
      }
      reported_this_spell = true;
    }
  }

  // Every node's report, rank 0's first; nullopt when a node could not answer (the job is
  // ending, or a peer was lost: that has its own message).
  std::optional<std::vector<wire::WaitReport>> Gather() {
    std::vector<wire::WaitReport> reports(static_cast<std::size_t>(node_.size()));
    reports[0] = OwnReport();
    std::vector<std::unique_ptr<Node::PendingRequest>> pending;
    bool failed = false;
    for (int rank = 1; rank < node_.size() && !failed; ++rank) {
      try {
        pending.push_back(node_.StartRequest(rank, MessageType::kWaitReport, {}));
      } catch (const Error& error) {
        DebugLine(std::string("hang watch: ") + error.what());
        failed = true;
      }
    }
    // Every started request is awaited, even after a failure: the node refers to it until then.
    // The wait is in slices, so that a node stopping under it does not keep this thread, and
    // bounded: a node whose progress thread is stuck is named instead of stalling the report.
    auto deadline = Clock::now() + kAnswerWithin;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      bool answered = true;
      while (!pending[i]->done.WaitFor(milliseconds(200))) {
        if (stopping_.load(std::memory_order_acquire)) {
          // The node is going away and may never answer: its requests are left to it.
          for (auto& request : pending) static_cast<void>(request.release());
          return std::nullopt;
        }
        if (Clock::now() >= deadline) {
          answered = false;
          break;
        }
      }
      if (!answered) {
        // Left to the node, which completes it if an answer ever comes; its report says why.
        static_cast<void>(pending[i].release());
        reports[i + 1].add_lines("did not answer within " + SecondsText(kAnswerWithin) +
                                 " (its progress thread may be stuck)");
        continue;
      }
      try {
        InboundMessage reply = node_.Await(*pending[i]);
        if (!reports[i + 1].ParseFromString(reply.body)) failed = true;
      } catch (const Error& error) {
        DebugLine(std::string("hang watch: ") + error.what());
        failed = true;
      }
    }
    if (failed || stopping_.load(std::memory_order_acquire)) return std::nullopt;
    return reports;
  }

  static void Say(const std::string& text) {
    std::fflush(stdout);
    std::size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
      if (n <= 0 && errno != EINTR) return;
      if (n > 0) done += static_cast<std::size_t>(n);
    }
  }

  // The whole report in one write, so that no other line lands inside it.
  static void Print(const std::string& header, const std::vector<wire::WaitReport>& reports) {
    std::string text = header + "\n";
    for (std::size_t rank = 0; rank < reports.size(); ++rank) {
      const wire::WaitReport& report = reports[rank];
      std::string who = "lmdx:   rank " + std::to_string(rank);
      if (report.lines().empty() && report.program_threads() == 0) {
        text += who + ": no thread of the program runs or waits here\n";
      }
      if (report.waiting() < report.program_threads()) {
        text += who + ": " + std::to_string(report.program_threads() - report.waiting()) +
                " thread(s) running\n";
      } else if (report.quiet_ms() > 0) {
        text += who + ": every thread waits; nothing arrived for " +
                SecondsText(milliseconds(report.quiet_ms())) + "\n";
      }
      for (const std::string& line : report.lines()) text += who + " " + line + "\n";
    }
    Say(text);
  }

  static constexpr int kDeadlockStatus = 1;
  static constexpr milliseconds kAnswerWithin{5000};

  Node& node_;
  Options options_;
  Fd stop_fd_;
  Fd quit_fd_;
  std::atomic<bool> stopping_{false};
  bool took_sigquit_ = false;
  struct sigaction previous_ = {};
  std::thread thread_;
};

HangWatch::HangWatch(Node& node, Options options) : impl_(std::make_unique<Impl>(node, options)) {}

HangWatch::~HangWatch() = default;

void HangWatch::Stop() { impl_->Stop(); }

}  // namespace lmdx::net
