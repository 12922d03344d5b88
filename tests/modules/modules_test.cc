// The module API between real nodes (programs/modules.cc says what each scenario does).
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <string>

#include "tests/testing/job_runner.h"

namespace lmdx::testing {
namespace {

std::string Program() { return BinaryFromEnv("MODULES"); }
std::string ModulesConf() { return BinaryFromEnv("MODULES_CONF"); }
std::string LrcConf() { return BinaryFromEnv("LRC_CONF"); }

bool Has(const JobResult& job, const std::string& line) {
  return job.out.find(line + "\n") != std::string::npos;
}

#define EXPECT_LINE(job, line) \
  EXPECT_TRUE(Has(job, line)) << "missing: " << (line) << "\n" << (job).out

TEST(ModulesTest, EachRankKnowsItsModuleItsMembersPortsAndLinks) {
  JobResult job = RunJob(Program(), 4, {"info"}, {"--config", ModulesConf()});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_LINE(job, "rank 0 module master index 0 of 1");
  EXPECT_LINE(job, "rank 0 members workers 1 2 3, own 0");
  EXPECT_LINE(
      job, "rank 0 port master.results_in, link work_out -> workers.work_in size 3 member 2 = 3");
  for (int rank = 1; rank <= 3; ++rank) {
    std::string r = "rank " + std::to_string(rank);
    EXPECT_LINE(job, r + " module workers index " + std::to_string(rank - 1) + " of 3");
    EXPECT_LINE(job, r + " port workers.work_in, link results_out -> master.results_in size 1");
  }
}

TEST(ModulesTest, LinksReachTheLinkedModulesMembersAndWrongUseNamesPortAndModule) {
  const std::string conf = ModulesConf();
  JobResult job = RunJob(Program(), 4, {"links"}, {"--config", conf});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out, " worked\n"), 3) << job.out;
  EXPECT_LINE(job, "rank 0 replies from 1 2 3");
  EXPECT_LINE(job,
              "rank 0 error -3: lmdx_link_member: index 3 is outside the module \"workers\" (3 "
              "members, 0 to 2), linked from \"master.work_out\"");
  EXPECT_LINE(job,
              "rank 0 error -3: lmdx_link_member: index -1 is outside the module \"workers\" (3 "
              "members, 0 to 2), linked from \"master.work_out\"");
  EXPECT_LINE(job,
              "rank 0 error -11: lmdx_link_port: the port \"master.results_in\" is not "
              "linked to any module (no link { from: \"master.results_in\" } in " +
                  conf +
                  "); it receives from workers.results_out: open it with "
                  "lmdx::module_port");
  EXPECT_LINE(job,
              "rank 0 error -11: lmdx_module_port: the module \"master\" has no port "
              "\"nope\" (its ports in " +
                  conf + ": work_out, results_in)");
  EXPECT_LINE(job,
              "rank 0 error -11: lmdx_link_port: the module \"master\" has no port \"nope\" "
              "(its ports in " +
                  conf + ": work_out, results_in)");
  EXPECT_LINE(job,
              "rank 0 error -3: lmdx_module_member: no module is called \"nobody\" "
              "(modules in " +
                  conf + ": master, workers)");
  EXPECT_LINE(job,
              "rank 0 error -3: lmdx_module_member: index 3 is outside the module \"workers\" (3 "
              "members, 0 to 2)");
}

TEST(ModulesTest, AModuleThatDoesNotShareMemoryGetsMisuseNamingIt) {
  const std::string conf = ModulesConf();
  JobResult job = RunJob(Program(), 4, {"memory"}, {"--config", conf});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const std::string why =
      ": the module \"master\" (rank 0) does not share memory: it talks by "
      "messages only (shares_memory: false in " +
      conf + ")";
  EXPECT_LINE(job, "rank 0 error -10: lmdx_malloc" + why);
  EXPECT_LINE(job, "rank 0 error -10: lmdx_alloc_collective" + why);
  EXPECT_LINE(job, "rank 0 error -10: lmdx_lookup" + why);
  // lmdx_shared_var, and lmdx::shared<T> over it.
  EXPECT_EQ(CountOf(job.out, "rank 0 error -10: lmdx_shared_var" + why + "\n"), 2) << job.out;
  EXPECT_EQ(CountOf(job.out, " shared ok\n"), 3) << job.out;
}

TEST(ModulesTest, InTheDefaultErrorModeTheMisuseEndsTheJobWithOneLine) {
  const std::string conf = ModulesConf();
  JobResult job =
      RunJob(Program(), 4, {"malloc-fatal"}, {"--config", conf}, std::chrono::seconds(60));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("lmdx[rank 0]: lmdx_malloc: the module \"master\" (rank 0) does not "
                         "share memory: it talks by messages only (shares_memory: false in " +
                         conf + ")\n"),
            std::string::npos)
      << job.err;
}

TEST(ModulesTest, AModulesProtocolIsTheDefaultOfItsVariablesAndARegionWins) {
  JobResult job = RunJob(Program(), 3, {"protocol"}, {"--config", LrcConf()});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  for (int rank = 1; rank <= 2; ++rank) {
    std::string r = "rank " + std::to_string(rank);
    EXPECT_LINE(job, r + " lrc variable ok");
    EXPECT_LINE(job, r + " error -11: lmdx_malloc: the module \"workers\" asks for protocol "
                         "\"lrc\", but the shared heap runs \"sc\" (dsm.heap, else "
                         "dsm.protocol): lmdx_malloc memory follows the heap's protocol; set "
                         "dsm.heap, or give the module's data a named variable or a dsm.region "
                         "instead");
    EXPECT_LINE(job, r + " sc region ok");
  }
}

TEST(ModulesTest, RunModulesRunsEachRanksEntryWithTheArgumentsAndReturnsItsStatus) {
  JobResult job = RunJob(Program(), 4, {"run", "extra", "--flag"}, {"--config", ModulesConf()});
  EXPECT_EQ(job.exit_code, 7) << job.out << job.err;  // the master's entry, rank 0's status
  EXPECT_LINE(job, "rank 0 runs master with run extra --flag");
  for (int rank = 1; rank <= 3; ++rank) {
    EXPECT_LINE(job, "rank " + std::to_string(rank) + " runs workers with run extra --flag");
  }
}

TEST(ModulesTest, RunModulesRefusesBadTablesOnEveryRank) {
  const std::string conf = ModulesConf();
  JobResult job = RunJob(Program(), 4, {"entries"}, {"--config", conf});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(CountOf(job.out,
                    " error -11: lmdx_run_modules: the module \"workers\" (ranks \"1-3\" "
                    "in " +
                        conf + ") has no entry (entries given: master)\n"),
            4)
      << job.out;
  EXPECT_EQ(CountOf(job.out, " error -3: lmdx_run_modules: the table of entries is NULL\n"), 4);
  EXPECT_EQ(
      CountOf(job.out, " error -3: lmdx_run_modules: the module \"master\" has two entries\n"), 4);
  EXPECT_EQ(CountOf(job.out,
                    " error -3: lmdx_run_modules: the entry of module \"workers\" has no main\n"),
            4);
  EXPECT_EQ(CountOf(job.out, " runs "), 0) << job.out;
}

TEST(ModulesTest, WithoutModulesTheCallsThatNeedOneSaySo) {
  JobResult job = RunJob(Program(), 2, {"none"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const std::string none =
      "the configuration declares no modules (no configuration file: "
      "LMDX_CONFIG is not set); see docs/configuration.md";
  EXPECT_EQ(CountOf(job.out, " error -11: lmdx_run_modules: " + none + "\n"), 2) << job.out;
  EXPECT_EQ(CountOf(job.out, " error -11: lmdx_link_port: " + none + "\n"), 2) << job.out;
  EXPECT_EQ(CountOf(job.out, " no module\n"), 2) << job.out;
}

TEST(ModulesTest, RunModulesNeedsTheSpmdStyle) {
  JobResult job = RunJob(Program(), 2, {"threads"}, {"--config", BinaryFromEnv("SOLO_CONF")});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_LINE(job, "rank 0 module solo");
  EXPECT_LINE(job,
              "rank 0 error -10: lmdx_run_modules: modules run on every rank, which needs "
              "lmdx_init_spmd: after lmdx_init only rank 0 runs main");
}

TEST(ModulesTest, TheLauncherRefusesAJobThatDoesNotFitTheModules) {
  const std::string conf = ModulesConf();
  JobResult beyond = RunJob(Program(), 3, {"info"}, {"--config", conf});
  EXPECT_EQ(beyond.exit_code, 2);
  EXPECT_EQ(beyond.out, "");
  EXPECT_NE(beyond.err.find("lmdx run: " + conf +
                            ":10:3: module[1].ranks: rank 3 of module \"workers\" (ranks \"1-3\") "
                            "is beyond the job's 3 ranks (0 to 2)\n"),
            std::string::npos)
      << beyond.err;
  JobResult left_out = RunJob(Program(), 5, {"info"}, {"--config", conf});
  EXPECT_EQ(left_out.exit_code, 2);
  EXPECT_NE(left_out.err.find("lmdx run: " + conf +
                              ": rank 4 of the job's 5 ranks (0 to 4) is in no module; when "
                              "modules are declared every rank runs one (modules: master 0, "
                              "workers 1-3)\n"),
            std::string::npos)
      << left_out.err;
}

// Started without a launcher, the program is a one-node job: lmdx_init_spmd itself finds that
// the modules name ranks the job lacks.
TEST(ModulesTest, LmdxInitRefusesRanksBeyondTheJob) {
  const std::string conf = ModulesConf();
  std::string command = "LMDX_CONFIG='" + conf + "' '" + Program() + "' singleton 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    output.append(buffer, n);
  int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(output, "lmdx: lmdx_init_spmd: " + conf +
                        ":10:3: module[1].ranks: rank 1 of module \"workers\" (ranks \"1-3\") is "
                        "beyond the job's 1 rank (rank 0)\n");
}

}  // namespace
}  // namespace lmdx::testing
