// `lmdx bench overlap`: the cluster study's measures (seed 001) for every LMDX network beside the
// OpenMPI transport of the same kind, in the same run: send and receive overheads, LogP's L and
// g and LogGP's G, and how much of an exchange a computation between post and wait hides. Runs
// the overlap and overlap_mpi programs (beside this driver) on 2 ranks each, prints a table per
// network and writes overlap.md, overlap.csv and, with gnuplot, overlap.png into --out.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/net/child_process.h"

namespace {

using lmdx::bench::ChildOutcome;
using lmdx::bench::describe;
using lmdx::bench::find_on_path;
using lmdx::bench::own_directory;
using lmdx::bench::run_child;
using Env = std::vector<std::pair<std::string, std::string>>;

struct Row {
  unsigned long long size = 0;
  double rtt2 = 0, os = 0, orr = 0, gap = 0, latency = 0, overlap = 0;
};

std::optional<Row> ParseRow(const std::string& line) {
  if (line.rfind("overlap size=", 0) != 0) return std::nullopt;
  Row row;
  int got =
      std::sscanf(line.c_str(),
                  "overlap size=%llu rtt2_us=%lf os_us=%lf or_us=%lf g_us=%lf L_us=%lf "
                  "overlap_pct=%lf",
                  &row.size, &row.rtt2, &row.os, &row.orr, &row.gap, &row.latency, &row.overlap);
  if (got != 7) return std::nullopt;
  return row;
}

// The runs of one side, or nothing when the job failed (said on stderr).
std::optional<std::vector<Row>> RunSide(const std::string& name,
                                        const std::vector<std::string>& argv, const Env& env) {
  std::vector<Row> rows;
  ChildOutcome outcome = run_child(argv, env, [&](const std::string& line) {
    if (auto row = ParseRow(line)) rows.push_back(*row);
  });
  if (!outcome.ok() || rows.empty()) {
    std::cerr << "overlap: the " << name << " run " << describe(outcome)
              << (rows.empty() ? " with no figures" : "") << std::endl;
    return std::nullopt;
  }
  return rows;
}

// LogGP's G: the gap's growth per byte between the two largest sizes, in ns per byte.
double PerByteGap(const std::vector<Row>& rows) {
  if (rows.size() < 2) return 0;
  const Row& a = rows[rows.size() - 2];
  const Row& b = rows.back();
  if (b.size == a.size) return 0;
  return (b.gap - a.gap) * 1000.0 / static_cast<double>(b.size - a.size);
}

std::string Size(unsigned long long bytes) {
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "lmdx bench overlap: send and receive overheads, LogP/LogGP parameters and the overlap of "
      "computation with non-blocking messages, for each LMDX network beside OpenMPI");
  bool quick = false;
  std::string out = "overlap-report";
  std::string lmdx_tool;
  if (const char* env = std::getenv("LMDX_TOOL")) lmdx_tool = env;
  std::vector<std::string> only;
  app.add_flag("--quick", quick,
               "three sizes and short phases: every path in seconds, figures "
               "meaningless");
  app.add_option("--out", out, "folder for overlap.md, overlap.csv and overlap.png")
      ->capture_default_str();
  app.add_option("--networks", only, "networks to measure (tcp, shm, udp, fabric-tcp, fabric-sm)")
      ->delimiter(',');
  app.add_option("--lmdx-tool", lmdx_tool, "the lmdx tool that launches LMDX jobs")
      ->default_str("$LMDX_TOOL");
  CLI11_PARSE(app, argc, argv);
  if (lmdx_tool.empty()) {
    std::cerr << "overlap: LMDX_TOOL is not set (run `lmdx bench overlap`, or pass --lmdx-tool)\n";
    return 1;
  }
  const std::string dir = own_directory();
  const std::string mpirun = find_on_path("mpirun");

  // As in `lmdx bench pingpong`: each LMDX network beside OpenMPI's transport of the same kind.
  struct Network {
    std::string name;
    std::string transport;
    Env env;
    std::vector<std::string> mpi_flags;
  };
  const std::vector<std::string> ucx_pml = {"--mca",       "pml", "ucx",    "--mca",
                                            "pml_ucx_tls", "any", "--mca",  "pml_ucx_devices",
                                            "any",         "-x",  "UCX_TLS"};
  const std::vector<Network> networks = {
      {"tcp", "tcp", {}, {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp"}},
      {"shm", "shm", {}, {"--mca", "pml", "ob1", "--mca", "btl", "self,vader"}},
      {"udp", "udp", {}, {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp"}},
      {"fabric-tcp", "fabric", {{"UCX_TLS", "tcp"}}, ucx_pml},
      {"fabric-sm", "fabric", {{"UCX_TLS", "sm"}}, ucx_pml},
  };
  for (const std::string& name : only) {
    bool known = false;
    for (const Network& network : networks) known |= network.name == name;
    if (!known) {
      std::cerr << "overlap: no network called '" << name
                << "' (tcp, shm, udp, fabric-tcp, fabric-sm)\n";
      return 2;
    }
  }

  std::ostringstream md;
  std::ofstream csv_file;
  std::string csv = "network,side,size,rtt2_us,os_us,or_us,g_us,L_us,overlap_pct\n";
  md << "# Overlap and LogP (" << (quick ? "quick" : "default")
     << " sizes; 2 ranks on one machine)\n\n"
     << "o_s: a send's isend+wait with the network idle; o_r: a receive's irecv+wait with its "
        "message there; g: time per message of a stream; L: half a round trip less o_s and o_r; "
        "overlap: the share of an exchange (irecv, isend, wait both) hidden by computing as long "
        "as one takes between post and wait. MPI's udp row is its tcp (OpenMPI has no UDP).\n";
  bool failed = false;
  std::vector<std::string> measured;  // "shm lmdx": the series with figures
  for (const Network& network : networks) {
    if (!only.empty() && std::find(only.begin(), only.end(), network.name) == only.end()) continue;
    Env lmdx_env = network.env;
    lmdx_env.emplace_back("LMDX_TRANSPORT", network.transport);
    std::vector<std::string> lmdx_argv = {lmdx_tool, "run", dir + "/overlap", "-n", "2"};
    if (quick) lmdx_argv.insert(lmdx_argv.end(), {"--", "--quick"});
    std::optional<std::vector<Row>> lmdx = RunSide("LMDX " + network.name, lmdx_argv, lmdx_env);
    std::optional<std::vector<Row>> mpi;
    if (!mpirun.empty()) {
      std::vector<std::string> mpi_argv = {mpirun, "-n", "2"};
      mpi_argv.insert(mpi_argv.end(), network.mpi_flags.begin(), network.mpi_flags.end());
      mpi_argv.insert(mpi_argv.end(), {"--bind-to", "none", dir + "/overlap_mpi"});
      if (quick) mpi_argv.push_back("--quick");
      Env mpi_env = network.env;
      mpi_env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT", "1");
      mpi_env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
      mpi = RunSide("MPI " + network.name, mpi_argv, mpi_env);
    }
    failed |= !lmdx;
    std::ostringstream table;
    table << "\n## " << network.name << "\n\n"
          << "| size | L µs (LMDX / MPI) | o_s µs | o_r µs | g µs | overlap % |\n"
          << "| --- | --- | --- | --- | --- | --- |\n";
    std::size_t rows = lmdx ? lmdx->size() : (mpi ? mpi->size() : 0);
    for (std::size_t i = 0; i < rows; ++i) {
      auto both = [&](double Row::*field, int digits) {
        std::string l = lmdx && i < lmdx->size() ? Fixed((*lmdx)[i].*field, digits) : "-";
        std::string m = mpi && i < mpi->size() ? Fixed((*mpi)[i].*field, digits) : "-";
        return l + " / " + m;
      };
      unsigned long long size = lmdx ? (*lmdx)[i].size : (*mpi)[i].size;
      table << "| " << Size(size) << " | " << both(&Row::latency, 1) << " | " << both(&Row::os, 1)
            << " | " << both(&Row::orr, 1) << " | " << both(&Row::gap, 1) << " | "
            << both(&Row::overlap, 0) << " |\n";
    }
    auto per_byte = [&](const std::optional<std::vector<Row>>& side) {
      if (!side) return std::string("-");
      double g = PerByteGap(*side);
      return Fixed(g, 3) + " ns/B (" + (g > 0 ? Fixed(1000.0 / g, 0) : std::string("-")) + " MB/s)";
    };
    table << "\nG (per byte, between the two largest sizes): LMDX " << per_byte(lmdx) << ", MPI "
          << per_byte(mpi) << "\n";
    std::cout << table.str() << std::flush;
    md << table.str();
    for (const auto& [side, rows_of] : {std::pair{"lmdx", &lmdx}, std::pair{"mpi", &mpi}}) {
      if (!*rows_of) continue;
      measured.push_back(network.name + " " + side);
      for (const Row& row : **rows_of) {
        csv += network.name + "," + side + "," + std::to_string(row.size) + "," +
               Fixed(row.rtt2, 2) + "," + Fixed(row.os, 2) + "," + Fixed(row.orr, 2) + "," +
               Fixed(row.gap, 2) + "," + Fixed(row.latency, 2) + "," + Fixed(row.overlap, 0) + "\n";
      }
    }
  }
  if (mpirun.empty()) {
    std::cout << "\nOpenMPI is not installed (no mpirun on PATH): the MPI columns are empty.\n";
  }
  std::string mkdir = "mkdir -p '" + out + "'";
  if (std::system(mkdir.c_str()) != 0) {
    std::cerr << "overlap: cannot create " << out << "\n";
    return 1;
  }
  std::ofstream(out + "/overlap.md") << md.str();
  std::ofstream(out + "/overlap.csv") << csv;
  std::string gnuplot = find_on_path("gnuplot");
  if (!gnuplot.empty() && !measured.empty()) {
    std::ofstream script(out + "/overlap.gp");
    // One series per side of each network measured (gnuplot refuses a series with no point).
    std::vector<std::string> series;
    for (const std::string& line : measured) series.push_back(line);
    auto plot = [&](const std::string& y) {
      std::string command = "plot ";
      for (std::size_t i = 0; i < series.size(); ++i) {
        std::string network = series[i].substr(0, series[i].find(' '));
        std::string side = series[i].substr(series[i].find(' ') + 1);
        command += std::string(i ? ", " : "") + "'" + out + "/overlap.csv' using (strcol(1) eq '" +
                   network + "' && strcol(2) eq '" + side + "' ? $3 : 1/0):" + y +
                   " with linespoints title '" + series[i] + "'";
      }
      return command + "\n";
    };
    script << "set terminal pngcairo size 1200,500 noenhanced\nset output '" << out
           << "/overlap.png'\nset datafile separator ','\nset logscale x 2\nset key top left\n"
           << "set multiplot layout 1,2 title 'non-blocking messages, 2 ranks"
           << (quick ? " (quick sizes: figures meaningless)" : "") << "'\n"
           << "set xlabel 'message bytes'\nset title 'overlap %'\nset yrange [0:100]\n"
           << plot("9") << "set title 'o_s + o_r (us)'\nset yrange [*:*]\nset logscale y\n"
           << plot("($5+$6)") << "unset multiplot\n";
    script.close();
    ChildOutcome drawn = run_child({gnuplot, out + "/overlap.gp"}, {}, [](const std::string&) {});
    if (!drawn.ok()) std::cerr << "overlap: gnuplot " << describe(drawn) << "\n";
  }
  std::cout << "\nwrote " << out << "/overlap.md, overlap.csv"
            << (gnuplot.empty() ? "" : ", overlap.png") << "\n";
  return failed ? 1 : 0;
}
