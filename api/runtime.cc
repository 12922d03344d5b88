// Starting and ending a node: lmdx_init, lmdx_init_spmd, lmdx_finalize, lmdx_abort.
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "api/internal/modules.h"
#include "api/internal/runtime_state.h"
#include "api/internal/shared_variables.h"
#include "api/internal/unused_regions.h"
#include "base/forked_child.h"
#include "base/log.h"
#include "config/config.h"
#include "dsm/service.h"
#include "groups/service.h"
#include "net/bootstrap.h"
#include "net/hang_watch.h"
#include "net/rendezvous_server.h"
#include "sync/service.h"
#include "tasks/runtime.h"
#include "threads/service.h"

namespace lmdx::api {
namespace {

// Under a launcher a node's stdout is a pipe, which stdio buffers fully: what a node printed
// before it crashed, or before the launcher stopped it, would be lost with the buffer. Line
// buffering, set when the program starts (before it prints anything), keeps every whole line.
[[maybe_unused]] const bool stdout_line_buffered = [] {
  bool under_a_launcher = false;
  for (const char* rank :
       {"LMDX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    under_a_launcher = under_a_launcher || std::getenv(rank) != nullptr;
  }
  if (under_a_launcher && ::isatty(STDOUT_FILENO) == 0) {
    std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  }
  return true;
}();

enum class Style { kThreads, kSpmd };

struct Runtime {
  // A program started without a launcher hosts its own rendezvous and runs as a one-node job.
  std::shared_ptr<net::RendezvousServer> own_rendezvous;
  std::unique_ptr<net::Node> node;
  // Created before the node joins (its handler is in place before any peer can send); outlives
  // the node, whose handler refers to it.
  std::unique_ptr<net::Ports> ports;
  Style style = Style::kSpmd;
};

std::mutex runtime_mutex;
Runtime runtime;
std::atomic<net::Ports*> current_ports{nullptr};
bool ever_initialized = false;

net::BootstrapInfo SingletonBootstrap() {
  net::BootstrapInfo info;
  info.secret = net::JobSecret::Generate();
  runtime.own_rendezvous = net::RendezvousServer::Start(info.secret, 1);
  info.rendezvous = runtime.own_rendezvous->address();
  info.job_id = "singleton-" + std::to_string(::getpid());
  info.bind_host = "127.0.0.1";
  info.launcher = "no launcher (one node)";
  return info;
}

dsm::Options DsmOptions(const config::Settings& settings) {
  dsm::Options options;
  options.base = settings.dsm_base;
  options.bytes = settings.dsm_bytes;
  options.stats = settings.stats_enabled;
  options.lrc_diff_limit = settings.lrc_diff_limit;
  options.access = settings.dsm_access == "userfaultfd" ? dsm::AccessControl::kUserfaultfd
                   : settings.dsm_access == "mprotect"  ? dsm::AccessControl::kMprotect
                                                        : dsm::AccessControl::kAuto;
  options.stats_json = settings.stats_json;
  options.one_sided = settings.dsm_one_sided != "off";
  options.fetch_ahead = settings.dsm_fetch_ahead != "off";
  options.guard_pages = settings.dsm_guard_pages;
  options.policy_for = [&settings](std::string_view name, const dsm::Creator& creator) {
    return RegionPolicyFor(settings, name, creator);
  };
  options.creator = ThisCreator();
  options.heap_protocol = std::string(config::ProtocolName(settings.heap_protocol));
  options.default_protocol = std::string(config::ProtocolName(settings.protocol));
  return options;
}

threads::Service::Options ThreadOptions(const config::Settings& settings) {
  threads::Service::Options options;
  options.placement = settings.placement == config::LEAST_LOADED ? threads::Placement::kLeastLoaded
                                                                 : threads::Placement::kRoundRobin;
  return options;
}

tasks::Options TaskOptions(const config::Settings& settings) {
  tasks::Options options;
  switch (settings.task_scheduler) {
    case config::Tasks::SHARE: options.scheduling = tasks::Scheduling::kShare; break;
    case config::Tasks::LEAST_LOADED: options.scheduling = tasks::Scheduling::kLeastLoaded; break;
    default: options.scheduling = tasks::Scheduling::kSteal; break;
  }
  options.runners = static_cast<int>(settings.task_runners);
  return options;
}

// The task runtime's threads end before the node goes. False when one is still inside a task: the
// node must then stay, as it does under LMDX threads still running.
bool TasksStopped() {
  tasks::Runtime* runtime = tasks::Current();
  // Stopped even when it never started: a late push or begin must not start runners now.
  return runtime == nullptr || runtime->StopAndJoin(std::chrono::seconds(2));
}

// Every layer's part of a node, in place before the node joins the job.
void AttachLayers(net::Node& node) {
  runtime.ports = std::make_unique<net::Ports>(node);
  runtime.ports->RegisterHandlers();
  sync::Attach(node);
  groups::Attach(node);
  dsm::Attach(node, DsmOptions(config::CurrentSettings()));
  dsm::Current()->SetFatalHandler([](const std::string& message) { ExitAfterPeerLoss(message); });
  threads::Attach(node, ThreadOptions(config::CurrentSettings()));
  tasks::Attach(node, TaskOptions(config::CurrentSettings()));
}

// LMDX_STATS: rank 0 gathers every node's figures while they all still serve.
void ReportStatsIfAsked() {
  dsm::Service* dsm = dsm::Current();
  if (dsm == nullptr || !dsm->options().stats || lmdx_rank() != 0) return;
  try {
    dsm->ReportJobStats();
    if (tasks::Runtime* runtime = tasks::Current())
      std::fputs(runtime->JobStatsTable().c_str(), stderr);
  } catch (const std::exception& error) {
    LogLine(std::string("statistics could not be gathered: ") + error.what());
  }
}

void OnPeerLost(int, const std::string& why) {
  if (lmdx_get_error_mode() == LMDX_ERRORS_RETURN) {
    LogLine(why + "; calls that need it will fail");
    return;
  }
  ExitAfterPeerLoss(why + "; the job cannot go on");
}

bool OnMainThread() { return ::gettid() == ::getpid(); }

// In a child of fork(), after base/forked_child.h marked it: the node it copied is left as it is,
// never stopped nor destroyed. Destroying it at the child's exit would join threads the child does
// not have and shut down connections it shares with its parent (the parent's peers would see the
// parent leave); its exit handlers below return at once for the same reason.
void AbandonRuntimeInForkedChild() {
  // No lock: the child has one thread, and a lock another thread held at fork stays held.
  static_cast<void>(runtime.node.release());
  static_cast<void>(runtime.ports.release());
  static_cast<void>(new std::shared_ptr<net::RendezvousServer>(std::move(runtime.own_rendezvous)));
  current_ports.store(nullptr);  // a port object destroyed in the child closes quietly
}

// exit(N) called by an LMDX thread (or any thread but main) ends this process at once with N,
// its output flushed: the static destructors exit would run next would tear the scheduler down
// under the running threads, the caller among them. The launcher then ends the job with N,
// naming this rank, as for exit in SPMD code.
void ExitAtOnceOffTheMainThread(int status, void*) {
  if (OnMainThread()) return;
  std::fflush(nullptr);
  ::_exit(status);
}

// Threads style: LMDX threads still running when the job ends end with the process, as POSIX
// threads do when main returns. The static destructors exit would run next would destroy the
// node, the DSM and the threads' own stacks under them, so the process leaves at once.
[[noreturn]] void LeaveUnderRunningThreads(int status) {
  std::fflush(nullptr);
  ::_exit(status);
}

// Threads style, rank 0: the job ends when main returns (or exit is called), with its status.
void EndJobAtExit(int status, void*) {
  if (InForkedChild()) return;  // a child's exit is not the job's end
  std::lock_guard lock(runtime_mutex);
  if (!runtime.node) return;
  if (!OnMainThread()) {
    // The other threads still run: end the job, then leave at once (see above).
    runtime.node->EndJob(status);
    std::fflush(nullptr);
    ::_exit(status);
  }
  MarkJobEnding();
  ReportStatsIfAsked();
  if (runtime.node->rank() == 0) WarnOfUnusedRegions(config::CurrentSettings());
  bool tasks_stopped = TasksStopped();
  current_node.store(nullptr);
  current_ports.store(nullptr);
  runtime.node->EndJob(status);
  if (threads::Current()->running() > 0 || !tasks_stopped) {
    runtime.own_rendezvous.reset();
    LeaveUnderRunningThreads(status);
  }
  dsm::Detach();
  runtime.node.reset();
  runtime.ports.reset();
  runtime.own_rendezvous.reset();
}

// SPMD style: a rank whose main returns (or calls exit(0)) without lmdx_finalize leaves the others
// waiting for it; the launcher then stops the job, and this line says why. A non-zero status is
// an exit the program chose, which the launcher reports with its status.
void SayFinalizeWasMissed(int status, void*) {
  if (status != 0 || !OnMainThread() || InForkedChild()) return;
  std::lock_guard lock(runtime_mutex);
  if (!runtime.node) return;
  LogLine(
      "the program ended without calling lmdx_finalize: in SPMD style every rank calls it "
      "before main returns, or the other ranks wait for it");
  std::fflush(nullptr);
}

int Init(const char* call, Style style) {
  {
    std::lock_guard lock(runtime_mutex);
    if (ever_initialized) {
      return Fail(call, LMDX_ERR_ALREADY_INITIALIZED,
                  "LMDX was already initialized in this process (lmdx_init and lmdx_init_spmd "
                  "may be called once)");
    }
    ever_initialized = true;
    // Before anything of the node exists, so that a child of any later fork() knows it is one
    // (WatchForForks' mark runs first).
    WatchForForks();
    ::pthread_atfork(nullptr, nullptr, AbandonRuntimeInForkedChild);
    // Registered first, so it runs after the other exit handlers and before the destructors of
    // the services the hang report asks (they were constructed before this call).
    std::atexit([] {
      if (!InForkedChild()) net::wait_board::StopAsking();
    });
    ::on_exit(ExitAtOnceOffTheMainThread, nullptr);
    net::BootstrapInfo info =
        net::StartedByALauncher() ? net::DetectBootstrap() : SingletonBootstrap();
    if (info.hosted_rendezvous) runtime.own_rendezvous = std::move(info.hosted_rendezvous);
    StartModules(config::CurrentSettings(), info.rank, info.size, style == Style::kSpmd);
    runtime.style = style;
    runtime.node = std::make_unique<net::Node>(info, AttachLayers);
    runtime.node->SetPeerLostHook(OnPeerLost);
    current_ports.store(runtime.ports.get());
    current_node.store(runtime.node.get());
  }
  net::Node& node = *current_node.load();
  // Threads created from this one inherit its signal mask.
  WarnIfFaultSignalBlocked(call);
  BindSharedVariables();
  threads::Current()->Open();  // now threads placed here may run
  if (style == Style::kThreads) {
    if (node.rank() != 0) {
      // Serve the job until rank 0's main returns, then leave with its status. Serving is not
      // running the program: the hang watch must not wait for this thread.
      net::wait_board::NotAProgramThread();
      int status = node.ServeUntilShutdown();
      MarkJobEnding();
      bool tasks_stopped = TasksStopped();
      node.AnnounceLeaving(status);
      node.WaitUntilPeerGone(0, std::chrono::seconds(5));
      node.Stop();
      if (threads::Current()->running() > 0 || !tasks_stopped) LeaveUnderRunningThreads(status);
      std::fflush(nullptr);
      std::exit(status);
    }
    ::on_exit(EndJobAtExit, nullptr);
  } else {
    ::on_exit(SayFinalizeWasMissed, nullptr);
  }
  return LMDX_OK;
}

}  // namespace

net::Ports* CurrentPorts() { return current_ports.load(std::memory_order_acquire); }

void ThrowNoNode() {
  WaitIfTheJobIsEnding();
  throw Error(LMDX_ERR_NOT_INITIALIZED, ever_initialized
                                            ? "called after lmdx_finalize"
                                            : "called before lmdx_init or lmdx_init_spmd");
}

}  // namespace lmdx::api

using lmdx::api::Guard;

extern "C" {

int lmdx_init(int* argc, char*** argv) {
  lmdx::api::RecordArguments(argc, argv);
  return Guard("lmdx_init",
               [] { return lmdx::api::Init("lmdx_init", lmdx::api::Style::kThreads); });
}

int lmdx_init_from_lmdxpp(int* argc, char*** argv, const char* file) {
  lmdx::net::SetDeadlockHint(
      std::string("lmdxpp started this program in threads style (it inserted lmdx_init before "
                  "the main of ") +
      (file != nullptr ? file : "the program") +
      ", which does not call it): main runs on rank 0 only, so a wait that every rank must "
      "join (lmdx_barrier_all, a collective) waits forever there; call lmdx_init_spmd(&argc, "
      "&argv) in main to run it on every rank");
  return lmdx_init(argc, argv);
}

int lmdx_init_spmd(int* argc, char*** argv) {
  lmdx::api::RecordArguments(argc, argv);
  return Guard("lmdx_init_spmd",
               [] { return lmdx::api::Init("lmdx_init_spmd", lmdx::api::Style::kSpmd); });
}

int lmdx_finalize(void) {
  return Guard("lmdx_finalize", [] {
    using namespace lmdx::api;
    lmdx::net::Node& node = RequireNode("lmdx_finalize");
    if (runtime.style == Style::kSpmd && lmdx::dsm::Current() != nullptr &&
        lmdx::dsm::Current()->options().stats) {
      // Every rank's figures are final once all have arrived; the finalize below keeps them
      // serving while rank 0 gathers.
      lmdx_barrier_all();
      ReportStatsIfAsked();
    } else if (runtime.style == Style::kThreads) {
      ReportStatsIfAsked();
    }
    // Outside the lock, with the node still current: threads other ranks placed here keep
    // running (and calling LMDX) until every rank has arrived.
    if (runtime.style == Style::kSpmd) node.AwaitFinalize();
    // Every variable of the run is placed by now (rank 0 places them all).
    if (node.rank() == 0) WarnOfUnusedRegions(lmdx::config::CurrentSettings());
    bool tasks_stopped = TasksStopped();
    if (!tasks_stopped) {
      lmdx::LogLine(
          "lmdx_finalize: a task still runs on this node (a spawn no lmdx_wait covered); it "
          "ends with the process");
    }
    std::lock_guard lock(runtime_mutex);
    current_node.store(nullptr);
    current_ports.store(nullptr);
    if (runtime.style == Style::kThreads) {
      node.EndJob(0);
    } else {
      node.Finalize();
    }
    if (!tasks_stopped) {
      // The task's runner may still use the node and the DSM: both stay, unreachable.
      static_cast<void>(runtime.node.release());
      return LMDX_OK;
    }
    lmdx::dsm::Detach();
    runtime.node.reset();
    runtime.ports.reset();
    runtime.own_rendezvous.reset();
    return LMDX_OK;
  });
}

int lmdx_rank(void) {
  lmdx::net::Node* node = lmdx::api::CurrentNode();
  return node != nullptr ? node->rank() : -1;
}

int lmdx_size(void) {
  lmdx::net::Node* node = lmdx::api::CurrentNode();
  return node != nullptr ? node->size() : -1;
}

void lmdx_abort(int status, const char* message) {
  lmdx::LogLine(std::string("lmdx_abort: ") + (message != nullptr ? message : "") + " (status " +
                std::to_string(status) + ")");
  std::fflush(nullptr);
  ::_exit(status != 0 ? status : 1);
}

}  // extern "C"
