// samples/hybrid through the launcher: a master module hands work to a worker module by messages,
// the workers share a matrix, the master checks every result; and the configurations it must
// refuse.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

namespace fs = std::filesystem;

std::string Hybrid() { return BinaryFromEnv("HYBRID"); }
std::string HybridConf() { return BinaryFromEnv("HYBRID_CONF"); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// hybrid.conf with one piece of text replaced, as a file of its own.
std::string VariantOf(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = ReadAll(HybridConf());
  std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const char* tmp = std::getenv("TEST_TMPDIR");
  fs::path path = fs::path(tmp != nullptr ? tmp : "/tmp") / name;
  std::ofstream(path) << text;
  return path.string();
}

class HybridTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ::setenv("LMDX_TRANSPORT", GetParam(), 1); }
  void TearDown() override { ::unsetenv("LMDX_TRANSPORT"); }
};

TEST_P(HybridTest, MasterAndWorkersComputeTheProductAndTheMasterVerifiesIt) {
  JobResult job = RunJob(Hybrid(), 4, {}, {"--config", HybridConf()});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out,
            "hybrid: 16 work items of a 64x64 matrix over work_out to 3 members of "
            "workers.work_in\nverified\n");
}

TEST_P(HybridTest, UnevenItemsAndAnotherSeed) {
  JobResult job = RunJob(Hybrid(), 4, {"--rows", "50", "--rows-per-item", "7", "--seed", "9"},
                         {"--config", HybridConf()});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(job.out,
            "hybrid: 8 work items of a 50x50 matrix over work_out to 3 members of "
            "workers.work_in\nverified\n");
}

INSTANTIATE_TEST_SUITE_P(Networks, HybridTest, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return std::string(info.param); });

// A worker that sends one wrong value: the master names the first difference and exits 1.
TEST(HybridCheckTest, AWrongResultIsReportedAndTheJobFails) {
  JobResult job = RunJob(Hybrid(), 4, {"--wrong-result"}, {"--config", HybridConf()});
  EXPECT_EQ(job.exit_code, 1) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, "verified"), 0) << job.out;
  EXPECT_NE(job.out.find("hybrid: first difference at row 4, column 0: got 145058, expected "
                         "145057 (from worker 1)\n"),
            std::string::npos)
      << job.out;
}

// `lmdx run hybrid -n 4` by name finds samples/hybrid/hybrid.conf by itself.
TEST(HybridCheckTest, RunByNameUsesTheSamplesConfiguration) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  fs::path home = fs::path(tmp != nullptr ? tmp : "/tmp") / "home";
  fs::create_directories(home / "samples" / "hybrid");
  fs::create_directories(home / "bazel-bin" / "samples" / "hybrid");
  fs::copy_file(HybridConf(), home / "samples" / "hybrid" / "hybrid.conf",
                fs::copy_options::overwrite_existing);
  fs::remove(home / "bazel-bin" / "samples" / "hybrid" / "hybrid");
  fs::create_symlink(Hybrid(), home / "bazel-bin" / "samples" / "hybrid" / "hybrid");
  ::setenv("LMDX_HOME", home.c_str(), 1);
  JobResult job = RunJob("hybrid", 4, {});
  ::unsetenv("LMDX_HOME");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified\n"), std::string::npos) << job.out;
}

// Configurations the sample must refuse, each with a line that names what is wrong.
TEST(HybridConfigTest, WorkersThatDoNotShareMemoryCannotCreateTheMatrix) {
  std::string conf = VariantOf("no_sharing.conf", "shares_memory: true\n  protocol: SC\n",
                               "shares_memory: false\n");
  JobResult job = RunJob(Hybrid(), 4, {}, {"--config", conf}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_EQ(CountOf(job.out, "verified"), 0);
  EXPECT_NE(job.err.find("lmdx_shared_var: the module \"workers\" (rank "), std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find(") does not share memory: it talks by messages only (shares_memory: "
                         "false in " +
                         conf + ")\n"),
            std::string::npos)
      << job.err;
}

TEST(HybridConfigTest, AnUnlinkedResultPortIsNamed) {
  std::string conf = VariantOf(
      "unlinked.conf", "link { from: \"workers.results_out\" to: \"master.results_in\" }", "");
  JobResult job = RunJob(Hybrid(), 4, {}, {"--config", conf}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("lmdx_link_port: the port \"workers.results_out\" is not linked to any "
                         "module (no link { from: \"workers.results_out\" } in " +
                         conf + ")\n"),
            std::string::npos)
      << job.err;
}

TEST(HybridConfigTest, AModuleTheProgramHasNoEntryForIsNamedOnEveryRank) {
  std::string conf = VariantOf("renamed.conf", "name: \"workers\"", "name: \"helpers\"");
  // The links name the module too.
  std::string text = ReadAll(conf);
  for (std::size_t at; (at = text.find("workers.")) != std::string::npos;) {
    text.replace(at, 8, "helpers.");
  }
  std::ofstream(conf) << text;
  JobResult job = RunJob(Hybrid(), 4, {}, {"--config", conf}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("lmdx_run_modules: the module \"helpers\" (ranks \"1-3\" in " + conf +
                         ") has no entry (entries given: master, workers)\n"),
            std::string::npos)
      << job.err;
}

TEST(HybridConfigTest, TheWorkersModulesProtocolRunsItsSharedMatrix) {
  std::string conf = VariantOf("lrc.conf", "protocol: SC", "protocol: LRC");
  JobResult job = RunJob(Hybrid(), 4, {}, {"--config", conf, "--stats"}, std::chrono::seconds(60));
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("verified\n"), std::string::npos) << job.out << job.err;
  // The workers' matrix moved under lrc (its faults fetch from homes and writers), not sc.
  EXPECT_NE((job.out + job.err).find("  lrc-fetch "), std::string::npos) << job.out << job.err;
  EXPECT_EQ((job.out + job.err).find("  sc-fetch "), std::string::npos) << job.out << job.err;
}

TEST(HybridConfigTest, MistakesInTheFileStopTheLauncherBeforeAnyNode) {
  std::string no_port = VariantOf("no_port.conf", "  port: \"results_in\"\n", "");
  JobResult job = RunJob(Hybrid(), 4, {}, {"--config", no_port});
  EXPECT_EQ(job.exit_code, 2);
  EXPECT_EQ(job.out, "");
  EXPECT_NE(job.err.find("lmdx run: " + no_port +
                         ":19:36: link[1].to: the module \"master\" has no port \"results_in\" "
                         "(its ports: work_out)\n"),
            std::string::npos)
      << job.err;

  JobResult too_many = RunJob(Hybrid(), 5, {}, {"--config", HybridConf()});
  EXPECT_EQ(too_many.exit_code, 2);
  EXPECT_NE(too_many.err.find(": rank 4 of the job's 5 ranks (0 to 4) is in no module; when "
                              "modules are declared every rank runs one (modules: master 0, "
                              "workers 1-3)\n"),
            std::string::npos)
      << too_many.err;
}

}  // namespace
}  // namespace lmdx::testing
