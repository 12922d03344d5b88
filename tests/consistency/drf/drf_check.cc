// The DRF fuzzer's driver (`./lmdx check-drf`): runs jobs of drf_fuzz, one seed each, through the
// real launcher, cycling over configurations (protocol, one-sided access on or off, userfaultfd or
// mprotect, shm or tcp), and reports the programs run per configuration and every job that read a
// wrong value, with the command that replays it. Exits 1 when any job failed.
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/consistency/drf/oracle.h"
#include "tests/consistency/drf/program.h"
#include "tests/testing/job_runner.h"

namespace lmdx::drf {
namespace {

constexpr const char* kUsage =
    "Usage: drf_check [--seed S | --first-seed S [--jobs N | --seconds T]] [--programs K]\n"
    "                 [--protocols sc,update,rc,lrc,hlrc,mixed] [--one-sided auto,off]\n"
    "                 [--access auto,mprotect] [--transport shm,tcp] [--keep-going]\n"
    "Runs N jobs (or jobs for T seconds) of K random data-race-free programs each, seeds S, S+1, "
    "...,\n"
    "each seed under the next configuration of the lists' product, and checks every read.\n";

struct Options {
  std::uint64_t first_seed = 1;
  std::optional<std::uint64_t> jobs;
  std::optional<double> seconds;
  int programs = 8;
  std::vector<std::string> protocols = {"sc", "update", "rc", "lrc", "hlrc", "mixed"};
  std::vector<std::string> one_sided = {"auto", "off"};
  std::vector<std::string> access = {"auto", "mprotect"};
  std::vector<std::string> transport = {"shm", "tcp"};
  bool keep_going = false;
};

struct Configuration {
  std::string protocol, one_sided, access, transport;
  std::string Name() const {
    return protocol + " one-sided=" + one_sided + " access=" + access + " transport=" + transport;
  }
};

struct Tally {
  std::uint64_t jobs = 0, programs = 0, failed = 0;
  // Pages the protocols fetched ahead of strided walks: what the jobs did of that path.
  std::uint64_t streamed = 0;
};

// The sum over the nodes of the job's statistics (LMDX_STATS_JSON) of a counter, 0 when the file
// is missing (a job that failed before its end).
std::uint64_t SumOfFigure(const std::string& json_path, const std::string& figure) {
  std::ifstream in(json_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const std::string key = "\"" + figure + "\": \"";
  std::uint64_t sum = 0;
  for (std::size_t at = all.find(key); at != std::string::npos; at = all.find(key, at + 1)) {
    sum += std::strtoull(all.c_str() + at + key.size(), nullptr, 10);
  }
  return sum;
}

[[noreturn]] void Usage(const std::string& problem) {
  std::fprintf(stderr, "drf_check: %s\n%s", problem.c_str(), kUsage);
  std::exit(2);
}

std::vector<std::string> List(const std::string& text, const std::vector<std::string>& allowed,
                              const std::string& flag) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    bool known = false;
    for (const std::string& one : allowed) known = known || one == item;
    if (!known) Usage(flag + ": unknown value \"" + item + "\"");
    items.push_back(item);
  }
  if (items.empty()) Usage(flag + " needs at least one value");
  return items;
}

std::uint64_t Number(const std::string& text, const std::string& flag) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') Usage(flag + " needs a whole number, not \"" + text + "\"");
  return value;
}

Options Parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    }
    if (flag == "--keep-going") {
      options.keep_going = true;
      continue;
    }
    if (i + 1 >= argc) Usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--seed") {
      options.first_seed = Number(value, flag);
      options.jobs = 1;
    } else if (flag == "--first-seed") {
      options.first_seed = Number(value, flag);
    } else if (flag == "--jobs") {
      options.jobs = Number(value, flag);
    } else if (flag == "--seconds") {
      options.seconds = static_cast<double>(Number(value, flag));
    } else if (flag == "--programs") {
      options.programs = static_cast<int>(Number(value, flag));
      if (options.programs <= 0) Usage("--programs must be positive");
    } else if (flag == "--protocols") {
      options.protocols = List(value, {"sc", "update", "rc", "lrc", "hlrc", "mixed"}, flag);
    } else if (flag == "--one-sided") {
      options.one_sided = List(value, {"auto", "off"}, flag);
    } else if (flag == "--access") {
      options.access = List(value, {"auto", "mprotect"}, flag);
    } else if (flag == "--transport") {
      options.transport = List(value, {"shm", "tcp"}, flag);
    } else {
      Usage("unknown flag " + flag);
    }
  }
  if (!options.jobs && !options.seconds) options.jobs = 48;
  return options;
}

std::vector<Configuration> Product(const Options& options) {
  std::vector<Configuration> all;
  for (const auto& transport : options.transport) {
    for (const auto& access : options.access) {
      for (const auto& one_sided : options.one_sided) {
        for (const auto& protocol : options.protocols) {
          all.push_back({protocol, one_sided, access, transport});
        }
      }
    }
  }
  return all;
}

std::string Scratch() {
  const char* directory = std::getenv("TEST_TMPDIR");
  return directory != nullptr ? directory : std::filesystem::temp_directory_path().string();
}

// The line that names the wrong value, or the end of what the job printed.
std::string WhatFailed(const testing::JobResult& job) {
  const std::string all = job.out + job.err;
  const std::size_t at = all.find("WRONG VALUE");
  if (at != std::string::npos) {
    const std::size_t start = all.rfind('\n', at);
    const std::size_t end = all.find('\n', at);
    return all.substr(start == std::string::npos ? 0 : start + 1,
                      end == std::string::npos ? std::string::npos : end - start - 1);
  }
  return all.size() > 3000 ? "..." + all.substr(all.size() - 3000) : all;
}

// Runs one seed's job; true when every read was right. Adds the pages fetched ahead to streamed.
bool RunOne(const Options& options, std::uint64_t seed, const Configuration& config,
            std::uint64_t& streamed) {
  const Layout layout = MakeLayout(seed, config.protocol, options.programs);
  const std::string stem =
      Scratch() + "/drf-" + std::to_string(::getpid()) + "-" + std::to_string(seed);
  const std::string conf = stem + ".conf";
  const std::string oracle = stem + ".oracle";
  const std::string stats = stem + ".json";
  std::ofstream(conf) << layout.ConfigText();
  std::size_t bytes = 0;
  for (const Variable& variable : layout.variables) bytes += variable.pages * kPageBytes;
  Oracle::Create(oracle, bytes);
  const std::vector<std::string> command = {testing::BinaryFromEnv("LMDX_TOOL"),
                                            "run",
                                            testing::BinaryFromEnv("DRF_FUZZ"),
                                            "-n",
                                            std::to_string(layout.nodes),
                                            "--config",
                                            conf,
                                            "--timeout",
                                            "150",
                                            "--",
                                            "--seed",
                                            std::to_string(seed),
                                            "--protocol",
                                            config.protocol,
                                            "--programs",
                                            std::to_string(options.programs),
                                            "--oracle",
                                            oracle};
  const testing::JobResult job = testing::RunCommand(
      command,
      {"LMDX_DSM_ONE_SIDED=" + config.one_sided, "LMDX_DSM_ACCESS=" + config.access,
       "LMDX_TRANSPORT=" + config.transport, "LMDX_STATS=1", "LMDX_STATS_JSON=" + stats},
      std::chrono::seconds(180));
  std::filesystem::remove(conf);
  std::filesystem::remove(oracle);
  // The nodes' figures, and each protocol's again: the node's own ones, rank by rank, come first
  // in each node's record, so the protocols' part is counted too; halve.
  streamed += SumOfFigure(stats, "pages_streamed") / 2;
  std::filesystem::remove(stats);
  const bool verified = job.exit_code == 0 &&
                        job.out.find("verified: seed " + std::to_string(seed)) != std::string::npos;
  if (!verified) {
    std::printf("FAILED: seed %llu (%s, %d nodes, threads per node",
                static_cast<unsigned long long>(seed), config.Name().c_str(), layout.nodes);
    for (int count : layout.threads_per_node) std::printf(" %d", count);
    std::printf(
        "), exit %d:\n  %s\n  replay: ./lmdx check-drf --seed %llu --programs %d --protocols %s "
        "--one-sided %s --access %s --transport %s\n",
        job.exit_code, WhatFailed(job).c_str(), static_cast<unsigned long long>(seed),
        options.programs, config.protocol.c_str(), config.one_sided.c_str(), config.access.c_str(),
        config.transport.c_str());
    std::fflush(stdout);
  }
  return verified;
}

int Main(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  const std::vector<Configuration> configurations = Product(options);
  std::map<std::string, Tally> tallies;
  const auto start = std::chrono::steady_clock::now();
  auto last_note = start;
  std::uint64_t failed = 0;
  for (std::uint64_t seed = options.first_seed;; ++seed) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.jobs && seed - options.first_seed >= *options.jobs) break;
    if (options.seconds && elapsed >= *options.seconds) break;
    const Configuration& config = configurations[seed % configurations.size()];
    Tally& tally = tallies[config.Name()];
    const bool ok = RunOne(options, seed, config, tally.streamed);
    ++tally.jobs;
    tally.programs += static_cast<std::uint64_t>(options.programs);
    if (!ok) {
      ++tally.failed;
      ++failed;
      if (!options.keep_going) break;
    }
    if (std::chrono::steady_clock::now() - last_note > std::chrono::seconds(60)) {
      last_note = std::chrono::steady_clock::now();
      std::printf("drf_check: %llu jobs so far, %llu failed\n",
                  static_cast<unsigned long long>(seed - options.first_seed + 1),
                  static_cast<unsigned long long>(failed));
      std::fflush(stdout);
    }
  }
  Tally total;
  std::printf("%-52s %8s %10s %8s %10s\n", "configuration", "jobs", "programs", "failed",
              "streamed");
  for (const auto& [name, tally] : tallies) {
    std::printf("%-52s %8llu %10llu %8llu %10llu\n", name.c_str(),
                static_cast<unsigned long long>(tally.jobs),
                static_cast<unsigned long long>(tally.programs),
                static_cast<unsigned long long>(tally.failed),
                static_cast<unsigned long long>(tally.streamed));
    total.jobs += tally.jobs;
    total.programs += tally.programs;
    total.failed += tally.failed;
    total.streamed += tally.streamed;
  }
  std::printf("%llu programs in %llu jobs, %llu jobs failed, %llu pages fetched ahead, %.0f s\n",
              static_cast<unsigned long long>(total.programs),
              static_cast<unsigned long long>(total.jobs),
              static_cast<unsigned long long>(total.failed),
              static_cast<unsigned long long>(total.streamed),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return total.failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace lmdx::drf

int main(int argc, char** argv) {
  try {
    return lmdx::drf::Main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "drf_check: %s\n", error.what());
    return 2;
  }
}
