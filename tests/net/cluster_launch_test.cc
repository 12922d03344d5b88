// Jobs started by a cluster's own launcher rather than `lmdx run`: OpenMPI's mpirun (installed
// here) and Slurm's srun, whose variables are set as srun sets them. Nothing LMDX-specific is set
// by hand: rank, size, the job secret and the rendezvous come through the launcher's PMIx.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/job_runner.h"
#include "tests/testing/scoped_env.h"

namespace lmdx::testing {
namespace {

using std::chrono::seconds;

// OpenMPI refuses to run as root unless told it may (CI machines run tests as root).
const std::vector<std::string> kMpirunEnv = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

JobResult Mpirun(int nodes, const std::vector<std::string>& command,
                 const std::vector<std::string>& exported = {}) {
  std::vector<std::string> args = {"mpirun", "-n", std::to_string(nodes), "--oversubscribe"};
  for (const std::string& name : exported) {
    args.push_back("-x");
    args.push_back(name);
  }
  args.insert(args.end(), command.begin(), command.end());
  return RunCommand(args, kMpirunEnv, seconds(120));
}

TEST(MpirunTest, ADsmProgramRunsUnderEveryProtocolFamily) {
  for (const char* protocol : {"sc", "lrc", "hlrc"}) {
    JobResult job;
    {
      ScopedEnv chosen("LMDX_PROTOCOL", protocol);
      job = Mpirun(4, {BinaryFromEnv("JACOBI"), "--size", "256", "--iterations", "20"},
                   {"LMDX_PROTOCOL"});
    }
    ASSERT_EQ(job.exit_code, 0) << protocol << "\n" << job.out << job.err;
    EXPECT_NE(job.out.find("on 4 nodes, protocol " + std::string(protocol)), std::string::npos)
        << job.out;
    EXPECT_NE(job.out.find("verified"), std::string::npos) << job.out << job.err;
  }
}

TEST(MpirunTest, ASyncProgramKeepsItsLocksExclusive) {
  JobResult job = Mpirun(4, {BinaryFromEnv("MUTEX"), "2", "2000"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0: counter 2000 of 2000, overlaps 0"), std::string::npos)
      << job.out << job.err;
}

TEST(MpirunTest, AMessageProgramReachesEveryRank) {
  JobResult job = Mpirun(4, {BinaryFromEnv("HELLO")});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(job.out.find("hello from rank " + std::to_string(rank) + " of 4"), std::string::npos)
        << job.out;
  }
  EXPECT_NE(job.out.find("rank 0 received 3 of 3 messages"), std::string::npos) << job.out;
}

// A rank that dies ends the job, named, as under `lmdx run`; nothing waits for ever.
TEST(MpirunTest, ARankThatDiesEndsTheJob) {
  JobResult job = Mpirun(3, {BinaryFromEnv("CRASH"), "2"});
  EXPECT_NE(job.exit_code, 0) << job.out << job.err;
  EXPECT_LT(job.elapsed, seconds(30));
  EXPECT_NE(job.err.find("rank 2"), std::string::npos) << job.err;
}

// srun --mpi=pmix gives each task SLURM_PROCID, SLURM_NTASKS and the rest, and a PMIx server:
// each process here gets Slurm's variables and mpirun's PMIx, without OpenMPI's own variables.
TEST(SrunTest, SlurmVariablesWithPmixStartTheJob) {
  const std::string as_srun =
      "exec env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE SLURM_PROCID=$PMIX_RANK "
      "SLURM_NTASKS=4 SLURM_NPROCS=4 SLURM_LOCALID=$PMIX_RANK SLURM_NODEID=0 SLURM_JOB_ID=4242 "
      "SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=4 SLURM_STEP_NODELIST=localhost \"$0\"";
  JobResult job = Mpirun(4, {"sh", "-c", as_srun, BinaryFromEnv("HELLO")});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("rank 0 received 3 of 3 messages"), std::string::npos) << job.out;
}

// srun without PMIx (--mpi=none) gives no way to exchange the job: the error says what to do.
TEST(SrunTest, SlurmWithoutPmixSaysHowToStartTheJob) {
  JobResult job =
      RunCommand({BinaryFromEnv("HELLO")},
                 {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=4242"}, seconds(30));
  EXPECT_NE(job.exit_code, 0);
  EXPECT_NE(job.err.find("started by Slurm (SLURM_PROCID=1), which offers this process no PMIx "
                         "server"),
            std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("srun --mpi=pmix"), std::string::npos) << job.err;
}

}  // namespace
}  // namespace lmdx::testing
