#include "tools/exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lmdx::tools {
namespace {

// The real wait status of a child that ends as `end` says.
template <typename End>
int WaitStatusOf(End end) {
  pid_t pid = ::fork();
  if (pid == 0) end();
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(ExitStatusTest, SignalNamesDoNotDependOnTheLocale) {
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(0x7f), "signal 127");
}

TEST(ExitStatusTest, ExitCode) {
  ExitStatus s = ExitStatus::FromWaitStatus(WaitStatusOf([] { ::_exit(3); }));
  EXPECT_FALSE(s.signaled);
  EXPECT_FALSE(s.success());
  EXPECT_EQ(s.ShellCode(), 3);
  EXPECT_EQ(s.Describe(), "exited with status 3");
}

TEST(ExitStatusTest, Signal) {
  ExitStatus s = ExitStatus::FromWaitStatus(WaitStatusOf([] {
    ::signal(SIGABRT, SIG_DFL);
    ::raise(SIGABRT);
    ::_exit(0);
  }));
  EXPECT_TRUE(s.signaled);
  EXPECT_EQ(s.ShellCode(), 128 + SIGABRT);
  EXPECT_EQ(s.Describe(), "died (killed by signal SIGABRT)");
}

TEST(ExitStatusTest, Success) {
  EXPECT_TRUE(ExitStatus::FromWaitStatus(WaitStatusOf([] { ::_exit(0); })).success());
}

}  // namespace
}  // namespace lmdx::tools
