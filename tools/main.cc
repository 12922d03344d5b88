// The `lmdx` tool: `run`, `cc` and `bench`. The ./lmdx script installs, builds and then hands
// these subcommands over with LMDX_HOME set to the repository.

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "tools/bench_command.h"
#include "tools/cc_command.h"
#include "tools/paths.h"
#include "tools/run_command.h"
#include "tools/usage_error.h"

namespace {

// Status for mistakes in the command line, as most Unix tools use.
constexpr int kUsageStatus = 2;

}  // namespace

static int Main(int argc, char** argv) {
  using namespace lmdx::tools;
  CLI::App app("LMDX, a distributed shared memory runtime for C and C++", "lmdx");
  app.require_subcommand(1);
  app.footer("Run lmdx SUBCOMMAND --help for the options of each.");
  RunOptions run_options;
  CLI::App* run = AddRunCommand(app, run_options);
  CLI::App* cc = AddCcCommand(app);
  CLI::App* bench = AddBenchCommand(app);

  std::string sub = "lmdx";
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Name the subcommand the mistake is in, and where its options are listed.
    std::string first = argc > 1 ? argv[1] : "";
    for (const CLI::App* command : {run, cc, bench}) {
      if (first == command->get_name()) {
        std::cerr << "lmdx " << first << ": " << e.what() << "\nRun lmdx " << first
                  << " --help for its options.\n";
        return kUsageStatus;
      }
    }
    std::cerr << "lmdx: " << e.what() << "\nRun lmdx --help, or lmdx SUBCOMMAND --help.\n";
    return kUsageStatus;
  }

  Paths paths = Paths::FromEnvironment();
  try {
    if (run->parsed()) {
      sub = "lmdx run";
      return RunCommand(run_options, paths);
    }
    if (cc->parsed()) {
      sub = "lmdx cc";
      return CcCommand(cc->remaining(), paths);
    }
    sub = "lmdx bench";
    return BenchCommand(bench->remaining(), paths);
  } catch (const UsageError& e) {
    std::cerr << sub << ": " << e.what() << "\n";
    return kUsageStatus;
  } catch (const std::exception& e) {
    std::cerr << sub << ": " << e.what() << "\n";
    return 1;
  }
}

// Anything that escapes is a bug, but it still ends with a line, not a bare abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "lmdx: " << error.what() << "\n";
    return 1;
  }
}
