#include "tools/run_command.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include "base/error.h"
#include "config/config.h"
#include "tools/launcher.h"
#include "tools/local_job.h"
#include "tools/signal_watch.h"
#include "tools/usage_error.h"

namespace lmdx::tools {

namespace fs = std::filesystem;

CLI::App* AddRunCommand(CLI::App& app, RunOptions& options) {
  CLI::App* run = app.add_subcommand("run", "Run a sample or an LMDX program on N local nodes");
  run->footer(
      "lmdx run NAME|PATH [-n N] [--protocol P] [--stats] [--tag-output] [--timeout SECONDS]\n"
      "         [--join-timeout SECONDS] [--config FILE] [-- ARGS...]\n"
      "NAME (no slash) is a sample, built as bazel-bin/samples/NAME/NAME; PATH is any "
      "executable.\nWhen a node dies the others are stopped and the launcher exits non-zero, "
      "naming the rank and the cause.\nThe configuration file (docs/configuration.md) is checked "
      "before any node starts; without --config, LMDX_CONFIG names it, and without either a "
      "sample's own samples/NAME/NAME.conf is used.\nExample: lmdx run jacobi --protocol hlrc "
      "--stats");
  run->add_option("program", options.target, "sample name or path of the executable")->required();
  run->add_option("args", options.args, "arguments for every node (after --)");
  run->add_option("-n,--nodes", options.nodes,
                  "number of nodes (processes), 1 to " + std::to_string(kMaxNodes) +
                      "; without it, as many as the configuration's modules name, else " +
                      std::to_string(kDefaultNodes))
      ->type_name("N");
  run->add_flag("--tag-output", options.tag_output, "prefix each output line with [rank]");
  run->add_flag("--show-transports", options.show_transports,
                "rank 0 prints which network each pair of nodes uses, once all have joined");
  run->add_option("--timeout", options.timeout, "stop the job after this many seconds (exit 124)")
      ->type_name("SECONDS");
  run->add_option("--join-timeout", options.join_timeout,
                  "stop the job, naming the rank, when a node has not joined (called lmdx_init) "
                  "after this many seconds; 0 waits for ever (default " +
                      std::to_string(kDefaultJoinTimeout.count()) + ", or LMDX_JOIN_TIMEOUT)")
      ->type_name("SECONDS");
  run->add_option("--protocol", options.protocol,
                  "default consistency protocol of every node: sc, update, rc, lrc or hlrc "
                  "(exported as LMDX_PROTOCOL; a dsm.region of the configuration still wins)")
      ->type_name("P");
  run->add_flag("--stats", options.stats,
                "print every node's protocol statistics at the end (exported as LMDX_STATS=1)");
  run->add_option("--rendezvous-host", options.rendezvous_host,
                  "address the rendezvous listens on (default 127.0.0.1): one the nodes reach "
                  "when a wrapper starts them in other network namespaces (docs/clusters.md)")
      ->type_name("ADDRESS");
  run->add_option("--config", options.config,
                  "configuration file of every node (exported to them as LMDX_CONFIG)")
      ->type_name("FILE");
  return run;
}

int ParseNodeCount(const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > kMaxNodes) {
    throw UsageError("-n needs a whole number of nodes from 1 to " + std::to_string(kMaxNodes) +
                     ", not '" + text + "'");
  }
  return value;
}

namespace {

// Seconds as text (fractions allowed) in milliseconds, rounded up; nullopt when not a finite
// number of at least min_seconds.
std::optional<std::chrono::milliseconds> ParseSeconds(const std::string& text, double min_seconds,
                                                      bool min_allowed) {
  double seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      seconds < min_seconds || (!min_allowed && seconds == min_seconds) || seconds > 1e9) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
}

}  // namespace

std::chrono::milliseconds ParseTimeout(const std::string& text) {
  auto value = ParseSeconds(text, 0, false);
  if (!value) throw UsageError("--timeout needs a positive number of seconds, not '" + text + "'");
  return *value;
}

std::optional<std::chrono::milliseconds> ParseJoinTimeout(const std::string& text,
                                                          const std::string& source) {
  auto value = ParseSeconds(text, 0, true);
  if (!value) {
    throw UsageError(source + " needs a number of seconds (0 for no limit), not '" + text + "'");
  }
  if (value->count() == 0) return std::nullopt;
  return value;
}

void CheckProtocolName(const std::string& protocol) {
  for (const char* known : {"sc", "update", "rc", "lrc", "hlrc"}) {
    if (protocol == known) return;
  }
  throw UsageError("--protocol needs one of sc, update, rc, lrc or hlrc, not '" + protocol + "'");
}

std::vector<std::string> AvailableSamples(const Paths& paths) {
  std::vector<std::string> names;
  if (paths.home().empty()) return names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(paths.home() / "samples", ec)) {
    // A sample's folder holds its program's source under its own name; others (common) are not.
    std::string name = entry.path().filename().string();
    bool program = fs::exists(entry.path() / (name + ".c"), ec) ||
                   fs::exists(entry.path() / (name + ".cc"), ec);
    if (entry.is_directory(ec) && program) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

fs::path ResolveProgram(const std::string& target, const Paths& paths) {
  if (target.find('/') != std::string::npos) {
    std::error_code ec;
    if (!fs::exists(target, ec)) throw UsageError("no such program: " + target);
    if (!IsExecutableFile(target)) throw UsageError(target + " is not an executable file");
    return fs::absolute(target, ec);
  }
  fs::path sample = paths.bin() / "samples" / target / target;
  if (IsExecutableFile(sample)) return sample;
  std::vector<std::string> samples = AvailableSamples(paths);
  if (std::find(samples.begin(), samples.end(), target) != samples.end()) {
    throw UsageError("the sample '" + target + "' is not built (no " + sample.string() +
                     "); run ./lmdx build");
  }
  std::string known;
  for (const std::string& s : samples) known += (known.empty() ? "" : ", ") + s;
  throw UsageError("no sample named '" + target +
                   "' (available: " + (known.empty() ? "none found" : known) +
                   "); to run a program of your own, give its path, e.g. ./" + target);
}

fs::path SampleConfiguration(const std::string& target, const Paths& paths) {
  if (target.find('/') != std::string::npos || paths.home().empty()) return {};
  fs::path file = paths.home() / "samples" / target / (target + ".conf");
  std::error_code ec;
  return fs::is_regular_file(file, ec) ? file : fs::path();
}

std::string CheckConfiguration(const std::string& config_option, int* nodes) {
  config::Environment env = config::ProcessEnvironment();
  std::string path = config_option;
  if (path.empty()) {
    auto it = env.find("LMDX_CONFIG");
    if (it != env.end()) path = it->second;
  }
  std::error_code ec;
  if (!path.empty() && fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    // Every node reads the file again: a pipe would be empty for all but the first reader.
    throw UsageError(path + ": the configuration file must be a regular file");
  }
  try {
    config::Settings settings;
    if (path.empty()) {
      settings = config::MakeSettings(config::Config(), env);  // the overrides alone
    } else {
      config::SourceLines lines;
      config::Config file = config::LoadConfigFile(path, &lines);
      settings = config::MakeSettings(file, env, path, &lines);
    }
    if (nodes != nullptr && *nodes == 0) {
      int implied = settings.ModuleJobSize();
      *nodes = implied > 0 ? implied : kDefaultNodes;
    }
    if (nodes != nullptr) settings.CheckModulesFit(*nodes);
    if (path.empty()) return "";
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return fs::absolute(path, ec).string();
}

int RunCommand(const RunOptions& options, const Paths& paths) {
  LaunchSpec spec;
  spec.nodes = options.nodes.empty() ? 0 : ParseNodeCount(options.nodes);
  // A sample may bring its configuration (samples/NAME/NAME.conf); a file given beats it.
  std::string config_option = options.config;
  const char* from_environment = std::getenv("LMDX_CONFIG");
  if (config_option.empty() && (from_environment == nullptr || *from_environment == '\0')) {
    config_option = SampleConfiguration(options.target, paths).string();
  }
  if (!options.protocol.empty()) {
    CheckProtocolName(options.protocol);
    // Set here too, so that the check of the configuration below sees the same override.
    ::setenv("LMDX_PROTOCOL", options.protocol.c_str(), 1);
  }
  if (options.stats) ::setenv("LMDX_STATS", "1", 1);
  // Before anything is started: a mistake in the configuration starts no node.
  std::string config_file = CheckConfiguration(config_option, &spec.nodes);
  if (!options.timeout.empty()) spec.timeout = ParseTimeout(options.timeout);
  spec.join_timeout = kDefaultJoinTimeout;
  if (!options.join_timeout.empty()) {
    spec.join_timeout = ParseJoinTimeout(options.join_timeout, "--join-timeout");
  } else if (const char* env = std::getenv("LMDX_JOIN_TIMEOUT"); env != nullptr && *env != 0) {
    spec.join_timeout = ParseJoinTimeout(env, "LMDX_JOIN_TIMEOUT");
  }
  spec.program = ResolveProgram(options.target, paths).string();
  spec.args = options.args;
  spec.tag_output = options.tag_output;
  // The watch comes before the rendezvous server's thread, which must inherit the blocked mask.
  SignalWatch signals(LauncherSignals());
  LocalJob job = LocalJob::Create(spec.nodes, options.rendezvous_host);
  spec.job_env = job.environment();
  // Rank 0 prints the matrix: it has the job table, and the choice is a function of the table
  // and the environment every node shares (net/transport_choice.h).
  if (options.show_transports) spec.job_env.push_back("LMDX_SHOW_TRANSPORTS=1");
  if (!config_file.empty()) spec.job_env.push_back("LMDX_CONFIG=" + config_file);
  spec.watch = &job;
  return RunJob(spec, signals);
}

}  // namespace lmdx::tools
