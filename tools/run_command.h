#ifndef LMDX_TOOLS_RUN_COMMAND_H_
#define LMDX_TOOLS_RUN_COMMAND_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tools/paths.h"

namespace lmdx::tools {

// `lmdx run NAME|PATH -n N [--tag-output] [--timeout SECONDS] [--config FILE] [-- program args]`.
struct RunOptions {
  std::string target;
  std::string nodes;  // text, so that "-n abc" gets our message rather than the parser's
  std::string timeout;
  std::string join_timeout;  // --join-timeout SECONDS; "" = LMDX_JOIN_TIMEOUT, else the default
  std::string config;        // --config FILE; "" = LMDX_CONFIG's file, if that is set
  bool tag_output = false;
  bool show_transports = false;
  std::string protocol;  // --protocol P: every node's default protocol (LMDX_PROTOCOL)
  bool stats = false;    // --stats: the protocol statistics at the end (LMDX_STATS=1)
  std::string rendezvous_host = "127.0.0.1";  // --rendezvous-host: where the rendezvous listens
  std::vector<std::string> args;
};

CLI::App* AddRunCommand(CLI::App& app, RunOptions& options);

// Parses -n: a whole number from 1 to kMaxNodes. Throws UsageError.
inline constexpr int kMaxNodes = 1024;
// The job size of `lmdx run` without -n and without modules in the configuration.
inline constexpr int kDefaultNodes = 4;
int ParseNodeCount(const std::string& text);
// Parses --timeout: seconds, a positive number (fractions allowed). Throws UsageError.
std::chrono::milliseconds ParseTimeout(const std::string& text);
// How long a node may take to join before the launcher names it and stops the job.
inline constexpr std::chrono::seconds kDefaultJoinTimeout{30};
// Parses --join-timeout (or LMDX_JOIN_TIMEOUT): seconds, 0 for no limit (nullopt). Throws
// UsageError naming `source`.
std::optional<std::chrono::milliseconds> ParseJoinTimeout(const std::string& text,
                                                          const std::string& source);
// Checks --protocol: one of the protocols this LMDX has. Throws UsageError naming them.
void CheckProtocolName(const std::string& protocol);

// NAME without a slash is a sample: bin/samples/NAME/NAME. Anything with a slash is a path to an
// executable. Throws UsageError naming what is wrong (and, for a sample, the ones there are).
std::filesystem::path ResolveProgram(const std::string& target, const Paths& paths);
// The samples in the repository: the folders under LMDX_HOME/samples, sorted.
std::vector<std::string> AvailableSamples(const Paths& paths);

// A sample's own configuration: LMDX_HOME/samples/NAME/NAME.conf when target is a sample's name
// (no slash) and that file exists; empty otherwise. `lmdx run NAME` uses it when neither
// --config nor LMDX_CONFIG names a file.
std::filesystem::path SampleConfiguration(const std::string& target, const Paths& paths);

// The configuration file the nodes will read: --config's, else LMDX_CONFIG's; "" when neither is
// given. It is checked, with the LMDX_* overrides of the environment, before any node starts:
// throws UsageError "FILE:LINE:COL: ..." on a mistake. With *nodes > 0 its modules are checked
// against a job of that many nodes too (a rank beyond it, a rank in no module); with nodes == 0 it
// is set to the job size the modules imply, or kDefaultNodes without modules. Returns its absolute
// path.
std::string CheckConfiguration(const std::string& config_option, int* nodes = nullptr);

// Starts the job and returns the launcher's exit status.
int RunCommand(const RunOptions& options, const Paths& paths);

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_RUN_COMMAND_H_
