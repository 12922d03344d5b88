// `lmdx bench pingpong`: runs the LMDX ping-pong and, when OpenMPI is installed, the same
// pattern over MPI in one invocation, and prints them side by side. The lmdx tool execs this
// with LMDX_TOOL (its own C++ tool, whose `run` starts an LMDX job) and LMDX_HOME set.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/net/child_process.h"
#include "benchmarks/net/core_to_core.h"
#include "benchmarks/net/other_load.h"
#include "benchmarks/net/pingpong_common.h"
#include "benchmarks/net/pingpong_table.h"

namespace lmdx::bench {
namespace {

// How many times a round is run again when its LMDX and MPI jobs met different states of the
// machine. The states seen here last from seconds to minutes, a round's two jobs about ten
// seconds each at full sizes.
constexpr int kRunsAgainPerRound = 2;

struct Run {
  std::string name;  // "LMDX" or "MPI", as the table and error lines call it
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
};

// Flags passed unchanged to both programs, so the two measure the same sizes the same way.
std::vector<std::string> pass_through(const PingPongOptions& o) {
  char target[32];
  std::snprintf(target, sizeof target, "%g", o.target_ms);
  return {"--min",  std::to_string(o.min_bytes), "--max",       std::to_string(o.max_bytes),
          "--reps", std::to_string(o.reps),      "--target-ms", target};
}

// Runs one job and returns its results, or nothing (after one line on stderr) when it failed.
// Adds to notes when other work on the machine may have distorted the figures.
std::optional<std::vector<PingPongResult>> run_job(const Run& run, std::size_t expected,
                                                   std::vector<std::string>& notes) {
  std::cerr << "running the " << run.name << " ping-pong:";
  for (const auto& a : run.argv) std::cerr << ' ' << a;
  std::cerr << std::endl;

  std::vector<PingPongResult> results;
  std::vector<std::string> other_lines;
  const OtherLoadMeter load;
  const ChildOutcome outcome = run_child(run.argv, run.env, [&](const std::string& line) {
    PingPongResult r;
    if (parse_result_line(line, r)) {
      results.push_back(r);
      std::cerr << "  " << run.name << ' ' << human_size(r.size_bytes) << ": " << r.latency_us
                << " us, " << r.bandwidth_mbps << " MB/s" << std::endl;
    } else if (line != kPingPongHeader) {
      other_lines.push_back(line);
    }
  });

  // A quarter of a core is enough to show up in microsecond latencies on a small machine.
  if (const double others = load.cores_used_by_others(); others > 0.25) {
    char note[160];
    std::snprintf(note, sizeof note,
                  "note: other processes kept %.1f cores busy during the %s run; its figures are "
                  "distorted",
                  others, run.name.c_str());
    notes.push_back(note);
  }

  std::string failure;
  if (!outcome.ok()) {
    failure = describe(outcome);
  } else if (results.size() != expected) {
    failure =
        "reported " + std::to_string(results.size()) + " of " + std::to_string(expected) + " sizes";
  }
  if (failure.empty()) return results;
  // Whatever else the job printed on stdout (its launcher's messages) helps explain why.
  for (const auto& l : other_lines) std::cerr << "  | " << l << '\n';
  std::cerr << "pingpong: the " << run.name << " run failed: " << failure << std::endl;
  return std::nullopt;
}

int bench_main(int argc, char** argv) {
  PingPongOptions options;
  std::string csv_path;
  std::string lmdx_tool;
  if (const char* env = std::getenv("LMDX_TOOL")) lmdx_tool = env;

  CLI::App app{
      "Ping-pong between 2 nodes on this machine: half round-trip latency and bandwidth per\n"
      "message size, median of several repetitions, for LMDX over TCP, shared memory, UDP and "
      "fabric\n"
      "(UCX over its tcp and shared-memory transports) and (when OpenMPI is installed) for MPI\n"
      "over its tcp and vader transports and over UCX with the same UCX_TLS, in the same run.",
      "lmdx bench pingpong"};
  add_pingpong_flags(app, options);
  int rounds = 1;
  app.add_option("--rounds", rounds,
                 "run each network's LMDX and MPI jobs this many times, alternately, and report "
                 "the medians, each round's ratio taken between its two jobs, and the range of the "
                 "latency ratio (figures on a small shared machine swing between runs)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--csv", csv_path, "also write the table as CSV to this file");
  app.add_option("--lmdx-tool", lmdx_tool, "the lmdx tool that launches LMDX jobs")
      ->default_str("$LMDX_TOOL");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = own_directory();
  const std::vector<std::string> args = pass_through(options);
  const std::size_t expected = pingpong_sizes(options.min_bytes, options.max_bytes).size();
  bool failed = false;
  std::vector<std::string> load_notes;
  const std::string mpirun = find_on_path("mpirun");
  if (lmdx_tool.empty()) {
    std::cerr << "pingpong: the LMDX run failed: LMDX_TOOL is not set (run `lmdx bench pingpong`, "
                 "or pass --lmdx-tool)"
              << std::endl;
    failed = true;
  }

  // Each LMDX network beside the OpenMPI transport of the same kind: TCP with OpenMPI's tcp btl,
  // shared memory with its vader btl (pml ob1 makes OpenMPI honour the btl list: otherwise it may
  // pick UCX or libfabric), and fabric with OpenMPI's pml ucx, both over the same UCX transports
  // (UCX_TLS). OpenMPI takes pml ucx only on transports it deems fast unless its tls and devices
  // lists say any.
  using Env = std::vector<std::pair<std::string, std::string>>;
  struct Network {
    std::string name;       // the table's title
    std::string transport;  // LMDX_TRANSPORT
    Env env;                // for both runs
    std::vector<std::string> mpi_flags;
    std::string how;  // the line under the table
  };
  const std::vector<std::string> ucx_pml = {"--mca",       "pml", "ucx",    "--mca",
                                            "pml_ucx_tls", "any", "--mca",  "pml_ucx_devices",
                                            "any",         "-x",  "UCX_TLS"};
  const Network networks[] = {
      {"tcp",
       "tcp",
       {},
       {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp"},
       "LMDX: LMDX_TRANSPORT=tcp; MPI: OpenMPI with --mca pml ob1 --mca btl self,tcp"},
      {"shm",
       "shm",
       {},
       {"--mca", "pml", "ob1", "--mca", "btl", "self,vader"},
       "LMDX: LMDX_TRANSPORT=shm; MPI: OpenMPI with --mca pml ob1 --mca btl self,vader"},
      // OpenMPI has no UDP transport: LMDX's own reliability over datagrams against MPI's TCP.
      {"udp",
       "udp",
       {},
       {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp"},
       "LMDX: LMDX_TRANSPORT=udp; MPI: OpenMPI with --mca pml ob1 --mca btl self,tcp (OpenMPI "
       "has no UDP transport)"},
      {"fabric (UCX tcp)",
       "fabric",
       {{"UCX_TLS", "tcp"}},
       ucx_pml,
       "LMDX: LMDX_TRANSPORT=fabric; MPI: OpenMPI with --mca pml ucx; both with UCX_TLS=tcp"},
      {"fabric (UCX shared memory)",
       "fabric",
       {{"UCX_TLS", "sm"}},
       ucx_pml,
       "LMDX: LMDX_TRANSPORT=fabric; MPI: OpenMPI with --mca pml ucx; both with UCX_TLS=sm"},
  };
  struct Compared {
    const Network* network;
    PingPongComparison comparison;
    std::string machine_states;  // per round, the state of the machine around each side's job
  };
  std::vector<Compared> comparisons;
  // Rounds alternate LMDX and MPI, so that both sides see the machine's swings alike.
  using Rounds = std::vector<std::vector<PingPongResult>>;
  auto result_of = [rounds](bool ok, const Rounds& done) {
    std::optional<std::vector<PingPongResult>> result;
    if (ok && !done.empty()) result = rounds == 1 ? done.front() : combine_rounds(done);
    return result;
  };
  // Each job is measured between two looks at how fast the machine moves a cache line between
  // cores (benchmarks/net/core_to_core.h).
  auto timed_job = [&](const Run& run, MachineState& state) {
    state.before_ns = measure_core_to_core_ns();
    std::optional<std::vector<PingPongResult>> results = run_job(run, expected, load_notes);
    state.after_ns = measure_core_to_core_ns();
    std::cerr << "  " << run.name << ": a cache line went from core to core in " << describe(state)
              << std::endl;
    failed |= !results;
    return results;
  };
  for (const Network& network : networks) {
    Run lmdx_run{"LMDX " + network.name,
                 {lmdx_tool, "run", dir + "/pingpong", "-n", "2", "--"},
                 network.env};
    lmdx_run.env.emplace_back("LMDX_TRANSPORT", network.transport);
    lmdx_run.argv.insert(lmdx_run.argv.end(), args.begin(), args.end());
    Run mpi_run{"MPI " + network.name, {mpirun, "-n", "2"}, network.env};
    mpi_run.argv.insert(mpi_run.argv.end(), network.mpi_flags.begin(), network.mpi_flags.end());
    mpi_run.argv.insert(mpi_run.argv.end(), {"--bind-to", "none", dir + "/pingpong_mpi"});
    mpi_run.env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT", "1");
    mpi_run.env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    mpi_run.argv.insert(mpi_run.argv.end(), args.begin(), args.end());

    Rounds lmdx_rounds;
    Rounds mpi_rounds;
    std::string states;  // per round: the machine's state during each side's job
    bool lmdx_ok = !lmdx_tool.empty();
    bool mpi_ok = !mpirun.empty();
    for (int round = 0; round < rounds && (lmdx_ok || mpi_ok); ++round) {
      // A round whose two jobs ran in different states of the machine compares the machine, not
      // LMDX with MPI: it is run again, a few times at most.
      for (int attempt = 0;; ++attempt) {
        MachineState lmdx_state, mpi_state;
        std::optional<std::vector<PingPongResult>> lmdx_results, mpi_results;
        if (lmdx_ok) lmdx_ok = (lmdx_results = timed_job(lmdx_run, lmdx_state)).has_value();
        if (mpi_ok) mpi_ok = (mpi_results = timed_job(mpi_run, mpi_state)).has_value();
        // Where the figure cannot be taken (a single CPU), every round is taken as it is.
        const bool measured = lmdx_state.before_ns && mpi_state.before_ns;
        const bool comparable =
            !lmdx_ok || !mpi_ok || !measured || same_state(lmdx_state, mpi_state);
        if (!comparable && attempt < kRunsAgainPerRound) {
          std::cerr << "  the machine was not in one state for both jobs (LMDX "
                    << describe(lmdx_state) << ", MPI " << describe(mpi_state)
                    << "): running the round again" << std::endl;
          continue;
        }
        if (lmdx_results) lmdx_rounds.push_back(std::move(*lmdx_results));
        if (mpi_results) mpi_rounds.push_back(std::move(*mpi_results));
        states += (states.empty() ? "" : "; ") + std::string("LMDX ") + describe(lmdx_state) +
                  ", MPI " + describe(mpi_state) + (comparable ? "" : " (not alike)");
        break;
      }
    }
    PingPongComparison comparison;
    comparison.lmdx = result_of(lmdx_ok, lmdx_rounds);
    comparison.mpi = result_of(mpi_ok, mpi_rounds);
    if (rounds > 1 && comparison.lmdx && comparison.mpi) {
      comparison.round_latency_ratios = round_ratios(lmdx_rounds, mpi_rounds);
    }
    comparisons.push_back({&network, std::move(comparison), std::move(states)});
  }

  for (const auto& [network, comparison, machine_states] : comparisons) {
    if (!comparison.lmdx && !comparison.mpi) continue;
    std::cout << "\nping-pong over " << network->name
              << ", 2 nodes on this host, half round trip, median of " << options.reps
              << " repetitions";
    if (rounds > 1) std::cout << ", median over " << rounds << " alternating rounds";
    std::cout << "\n";
    print_table(comparison, std::cout);
    std::cout << "a cache line from core to core, one way, around each round's jobs: "
              << machine_states << "\n";
    if (comparison.mpi) std::cout << network->how << "\n";
    if (comparison.lmdx && comparison.mpi) {
      std::cout << "ratios are LMDX/MPI: latency under 1x and bandwidth over 1x favour LMDX";
      if (rounds > 1)
        std::cout << "; each the median of the rounds' own (a job against the one beside it)";
      std::cout << "\n";
    }
  }
  for (const auto& note : load_notes) std::cout << note << '\n';
  if (mpirun.empty()) {
    std::cout << "OpenMPI is not installed (no mpirun on PATH): the MPI comparison was skipped.\n";
  }
  std::cout << std::flush;

  if (!csv_path.empty()) {
    // One block per network, each with its own header line.
    std::ofstream csv(csv_path);
    for (const auto& [network, comparison, machine_states] : comparisons) {
      if (!comparison.lmdx && !comparison.mpi) continue;
      csv << "# network " << network->name << '\n';
      write_csv(comparison, csv);
    }
    csv.close();
    if (!csv) {
      std::cerr << "pingpong: could not write " << csv_path << std::endl;
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace lmdx::bench

// Anything that escapes is a bug, but it still ends with a line, not a bare abort.
int main(int argc, char** argv) {
  try {
    return lmdx::bench::bench_main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "pingpong_bench: " << error.what() << "\n";
    return 1;
  }
}
