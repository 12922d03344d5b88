// The plain-threads versions of the samples (SAMPLE_threads), run directly as
// `lmdx bench protocols` runs them: each checks its result as its sample does and must print
// `verified` on 1 thread and on 3 (uneven bands, more threads than this machine's cores);
// --wrong-result must make the check name the spoiled element and fail with status 1; and none
// links LMDX, the point of a reference over private memory.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

struct Version {
  const char* name;             // the program's name, which starts its lines
  const char* binary_variable;  // the environment variable that holds its path
  std::vector<std::string> small_args;
  const char* spoiled;  // the line --wrong-result must bring, after "NAME: "
};

const std::vector<Version>& Versions() {
  static const std::vector<Version> versions = {
      {"jacobi_threads",
       "JACOBI_THREADS",
       {"--size", "256", "--iterations", "20"},
       "grid\\[1\\]\\[128\\] = [0-9.e+-]+, expected [0-9.e+-]+"},
      {"matmul_threads",
       "MATMUL_THREADS",
       {"--size", "128"},
       "C\\[0\\]\\[64\\] = [0-9.e+-]+, expected [0-9.e+-]+"},
      {"fft_threads",
       "FFT_THREADS",
       {"--log2-points", "12"},
       "X\\[32\\] = [0-9.e+-]+[+-][0-9.e+-]+i, expected [0-9.e+-]+[+-][0-9.e+-]+i"},
      {"radix_threads",
       "RADIX_THREADS",
       {"--keys", "65536"},
       "key\\[32768\\] = [0-9]+, expected [0-9]+"},
      // Producer 0 puts item 151 where 150 belongs: with two consumers, either one of them takes
      // the two 151s out of order or main finds 151 taken twice.
      {"prodcons_threads",
       "PRODCONS_THREADS",
       {"--items", "300", "--producers", "2", "--consumers", "2"},
       "(consumer [01]'s item [0-9]+ is 151, after 151|item 151 was taken twice)"},
      {"lu_threads",
       "LU_THREADS",
       {"--size", "128", "--block", "16"},
       "LU\\[1\\]\\[64\\] = [0-9.e+-]+, expected [0-9.e+-]+"},
  };
  return versions;
}

std::vector<std::string> WithFlags(const Version& version, std::vector<std::string> flags) {
  std::vector<std::string> command = {BinaryFromEnv(version.binary_variable)};
  command.insert(command.end(), version.small_args.begin(), version.small_args.end());
  command.insert(command.end(), flags.begin(), flags.end());
  return command;
}

// The line `lmdx bench protocols` reads the time from, in the form of the sample's own: prodcons
// names the CPUs its threads run on (as many as --workers, at most the machine's), the others
// their threads.
std::string TimeLine(const Version& version, int workers) {
  std::string who = std::string(version.name) == "prodcons_threads"
                        ? (workers == 1 ? "on 1 CPU" : "on [1-9][0-9]* CPUs?")
                        : std::to_string(workers) + " threads";
  return std::string("(^|\n)") + version.name + ": [^\n]*" + who +
         ": [0-9]+\\.[0-9]{3} s( \\([^\n]*\\))?\n";
}

TEST(ThreadsVersionsTest, VerifyOnOneAndOnThreeThreads) {
  for (const Version& version : Versions()) {
    for (int workers : {1, 3}) {
      JobResult run = RunCommand(WithFlags(version, {"--workers", std::to_string(workers)}));
      EXPECT_EQ(run.exit_code, 0) << version.name << " on " << workers << "\n"
                                  << run.out << run.err;
      EXPECT_TRUE(run.out.ends_with("\nverified\n")) << version.name << "\n" << run.out;
      EXPECT_EQ(CountOf(run.out, "verified"), 1) << version.name << "\n" << run.out;
      EXPECT_TRUE(std::regex_search(run.out, std::regex(TimeLine(version, workers))))
          << version.name << " on " << workers << "\n"
          << run.out;
    }
  }
}

TEST(ThreadsVersionsTest, ASpoiledResultIsNamedAndTheRunFails) {
  for (const Version& version : Versions()) {
    JobResult run = RunCommand(WithFlags(version, {"--workers", "3", "--wrong-result"}));
    EXPECT_EQ(run.exit_code, 1) << version.name << "\n" << run.out << run.err;
    EXPECT_EQ(CountOf(run.out, "verified"), 0) << version.name << "\n" << run.out;
    EXPECT_TRUE(std::regex_search(
        run.out, std::regex(std::string("(^|\n)") + version.name + ": " + version.spoiled + "\n")))
        << version.name << "\n"
        << run.out;
  }
}

TEST(ThreadsVersionsTest, ABadWorkerCountIsNamed) {
  for (const Version& version : Versions()) {
    JobResult run = RunCommand(WithFlags(version, {"--workers", "0"}));
    EXPECT_EQ(run.exit_code, 2) << version.name << "\n" << run.out << run.err;
    EXPECT_NE(run.err.find(std::string(version.name) + ": --workers needs a whole number from 1 "
                                                       "to 1024, not '0'"),
              std::string::npos)
        << run.err;
  }
}

bool Mentions(const std::string& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << path;
  return bytes.find(text) != std::string::npos;
}

// The binaries keep their symbol tables (the build never strips), so a program that linked LMDX,
// statically or not, names lmdx_init in its file: the shared version of jacobi does.
TEST(ThreadsVersionsTest, NoneLinksLmdx) {
  ASSERT_TRUE(Mentions(BinaryFromEnv("JACOBI"), "lmdx_init"));
  for (const Version& version : Versions()) {
    EXPECT_FALSE(Mentions(BinaryFromEnv(version.binary_variable), "lmdx_init")) << version.name;
  }
}

}  // namespace
}  // namespace lmdx::testing
