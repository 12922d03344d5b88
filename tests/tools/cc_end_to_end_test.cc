// `lmdx cc` as a user outside the repository runs it: a C and a C++ program written against
// <lmdx/lmdx.h> are compiled and linked with the tool, then run as a job with `lmdx run`.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/tools/subprocess.h"
#include "tests/tools/test_binaries.h"

namespace lmdx::tools::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kProgram[] = R"(#include <lmdx/lmdx.h>
#include <stdio.h>
int main(int argc, char **argv) {
  lmdx_init_spmd(&argc, &argv);
  int rank = lmdx_rank();
  if (rank != 0) {
    lmdx_send(0, &rank, sizeof rank);
  } else {
    int sum = 0;
    for (int i = 1; i < lmdx_size(); ++i) {
      int value = 0;
      lmdx_status status;
      lmdx_recv(LMDX_ANY_SOURCE, &value, sizeof value, &status);
      sum += value;
    }
    printf("sum %d\n", sum);
  }
  lmdx_finalize();
  return 0;
}
)";

// The MDX dialect: lmdx cc runs lmdxpp before compiling.
constexpr char kDialectProgram[] = R"(#include <stdint.h>
#include <stdio.h>
LMDX_shared long squares[64];
LMDX_thread square(void *arg) {
  for (long i = (intptr_t)arg; i < 64; i += 4) squares[i] = i * i;
}
int main(void) {
  for (int t = 0; t < 4; t++) LMDX_start_thread(square, (void *)(intptr_t)t);
  for (int t = 0; t < 4; t++) LMDX_join_thread(square);
  long sum = 0;
  for (int i = 0; i < 64; i++) sum += squares[i];
  printf("sum of squares %ld, %zu bytes\n", sum, sizeof squares);
  return 0;
}
)";

// A repository as the tool expects it (include/ and bazel-bin/api/liblmdx.so), made of links
// into the test's runfiles, and a folder outside it for the user's program.
class CcEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "lmdx-cc-test-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
    home_ = root_ / "lmdx";
    fs::create_directories(home_ / "bazel-bin" / "api");
    fs::create_directory_symlink(fs::absolute("include"), home_ / "include");
    fs::create_symlink(TestBinary("LIBLMDX_SO"), home_ / "bazel-bin" / "api" / "liblmdx.so");
    user_ = root_ / "user";
    fs::create_directories(user_);
  }
  void TearDown() override { fs::remove_all(root_); }

  Outcome Lmdx(std::vector<std::string> args) {
    args.insert(args.begin(), TestBinary("LMDX_TOOL_BIN"));
    return RunProcess(args, {"LMDX_HOME=" + home_.string()});
  }

  // Under a sanitizer configuration liblmdx.so carries the sanitizer; a program loading it must
  // too.
  static std::vector<std::string> SanitizerFlags() {
#if defined(__SANITIZE_ADDRESS__)
    return {"-fsanitize=address,undefined"};
#elif defined(__SANITIZE_THREAD__)
    return {"-fsanitize=thread"};
#else
    return {};
#endif
  }

  fs::path root_, home_, user_;
};

TEST_F(CcEndToEndTest, CProgramBuildsAndRuns) {
  fs::path source = user_ / "sum.c";
  std::ofstream(source) << kProgram;
  fs::path program = user_ / "sum";
  std::vector<std::string> cc = {"cc", source.string(), "-O2", "-o", program.string(), "-v"};
  for (const std::string& flag : SanitizerFlags()) cc.push_back(flag);
  Outcome built = Lmdx(cc);
  ASSERT_EQ(built.code, 0) << built.err;
  EXPECT_NE(built.err.find("gcc -std=gnu11"), std::string::npos) << built.err;  // -v
  Outcome ran = Lmdx({"run", program.string(), "-n", "4"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "sum 6\n");
}

TEST_F(CcEndToEndTest, CxxProgramBuildsAndRuns) {
  fs::path source = user_ / "sum.cc";
  std::ofstream(source) << kProgram;
  fs::path program = user_ / "sum_cxx";
  std::vector<std::string> cc = {"cc", source.string(), "-o", program.string()};
  for (const std::string& flag : SanitizerFlags()) cc.push_back(flag);
  Outcome built = Lmdx(cc);
  ASSERT_EQ(built.code, 0) << built.err;
  Outcome ran = Lmdx({"run", program.string(), "-n", "3"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "sum 3\n");
}

// `lmdx cc work.proto prog.cc`: protoc runs, the program includes the generated header, and a
// typed message goes between ranks over a port.
TEST_F(CcEndToEndTest, ProtoFileBecomesClassesTheProgramUses) {
  std::ofstream(user_ / "work.proto") << "syntax = \"proto3\";\npackage demo;\n"
                                         "message Work { int32 value = 1; }\n";
  std::ofstream(user_ / "typed.cc") << R"(#include <lmdx/lmdx.h>
#include <cstdio>
#include "work.pb.h"
int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  demo::Work work;
  work.set_value(40 + lmdx_rank());
  std::string bytes = work.SerializeAsString();
  demo::Work back;
  back.ParseFromString(bytes);
  std::printf("rank %d: %s %d\n", lmdx_rank(), demo::Work::descriptor()->full_name().c_str(),
              back.value());
  lmdx_finalize();
  return 0;
}
)";
  fs::path program = user_ / "typed";
  std::vector<std::string> cc = {"cc", (user_ / "work.proto").string(),
                                 (user_ / "typed.cc").string(), "-o", program.string()};
  for (const std::string& flag : SanitizerFlags()) cc.push_back(flag);
  Outcome built = Lmdx(cc);
  ASSERT_EQ(built.code, 0) << built.err;
  Outcome ran = Lmdx({"run", program.string(), "-n", "2", "--tag-output"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_NE(ran.out.find("[0] rank 0: demo.Work 40\n"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("[1] rank 1: demo.Work 41\n"), std::string::npos) << ran.out;
}

TEST_F(CcEndToEndTest, CompilerFailurePassesItsStatusThrough) {
  fs::path source = user_ / "broken.c";
  std::ofstream(source) << "int main(void) { return undeclared; }\n";
  Outcome built = Lmdx({"cc", source.string(), "-o", (user_ / "broken").string()});
  EXPECT_EQ(built.code, 1);
  EXPECT_NE(built.err.find("undeclared"), std::string::npos) << built.err;
  EXPECT_FALSE(fs::exists(user_ / "broken"));
}

TEST_F(CcEndToEndTest, DialectProgramIsPreprocessedBuiltAndRun) {
  fs::path source = user_ / "squares.c";
  std::ofstream(source) << kDialectProgram;
  fs::path program = user_ / "squares";
  std::vector<std::string> cc = {"cc", source.string(), "-o", program.string(), "-v"};
  for (const std::string& flag : SanitizerFlags()) cc.push_back(flag);
  Outcome built = Lmdx(cc);
  ASSERT_EQ(built.code, 0) << built.err;
  EXPECT_NE(built.err.find("lmdxpp " + source.string() + " -o "), std::string::npos) << built.err;
  Outcome ran = Lmdx({"run", program.string(), "-n", "3"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "sum of squares 85344, 512 bytes\n");  // 0^2 + ... + 63^2
}

// A program that forgets lmdx_init: lmdxpp says at build time that it starts LMDX in threads
// style, and when the program then waits at a barrier of every rank, the deadlock report says why.
TEST_F(CcEndToEndTest, AProgramWithoutLmdxInitIsToldWhatLmdxppInsertedAndWhyItDeadlocks) {
  fs::path source = user_ / "forgot.c";
  std::ofstream(source) << "#include <stdio.h>\n"
                           "int main(int argc, char **argv) {\n"
                           "  lmdx_barrier_all();\n"
                           "  printf(\"after the barrier\\n\");\n"
                           "  return 0;\n"
                           "}\n";
  fs::path program = user_ / "forgot";
  std::vector<std::string> cc = {"cc", source.string(), "-o", program.string()};
  for (const std::string& flag : SanitizerFlags()) cc.push_back(flag);
  Outcome built = Lmdx(cc);
  ASSERT_EQ(built.code, 0) << built.err;
  EXPECT_NE(built.err.find(source.string() +
                           ":2:5: note: lmdxpp starts LMDX before this main with lmdx_init, "
                           "since the program does not call it: threads style"),
            std::string::npos)
      << built.err;
  Outcome ran = RunProcess({TestBinary("LMDX_TOOL_BIN"), "run", program.string(), "-n", "2"},
                           {"LMDX_HOME=" + home_.string(), "LMDX_DEADLOCK_AFTER=1"});
  EXPECT_NE(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out.find("after the barrier"), std::string::npos) << ran.out;
  EXPECT_NE(ran.err.find("lmdx: deadlock: every thread of every node has waited"),
            std::string::npos)
      << ran.err;
  EXPECT_NE(ran.err.find("lmdx: deadlock: lmdxpp started this program in threads style (it "
                         "inserted lmdx_init before the main of " +
                         source.string() + ", which does not call it)"),
            std::string::npos)
      << ran.err;
}

TEST_F(CcEndToEndTest, CompilerMessagesPointAtTheUsersLines) {
  fs::path source = user_ / "typo.c";
  std::ofstream(source) << "LMDX_shared int grid[4];\n\nint main(void) {\n  return grdi[0];\n}\n";
  Outcome built = Lmdx({"cc", source.string(), "-o", (user_ / "typo").string()});
  EXPECT_EQ(built.code, 1);
  EXPECT_NE(built.err.find(source.string() + ":4:10: error: 'grdi' undeclared"), std::string::npos)
      << built.err;
  // The function is the user's main, not the name lmdxpp gave it, and no message names the
  // translation in the temporary folder.
  EXPECT_NE(built.err.find(source.string() + ": In function 'main'"), std::string::npos)
      << built.err;
  EXPECT_EQ(built.err.find("lmdx_program_main"), std::string::npos) << built.err;
  EXPECT_EQ(built.err.find("/0-typo.c"), std::string::npos) << built.err;
}

TEST_F(CcEndToEndTest, MalformedConstructStopsBeforeTheCompiler) {
  fs::path source = user_ / "bad.c";
  std::ofstream(source) << "int main(void) {\n  LMDX_barrier(a, b);\n  return 0;\n}\n";
  Outcome built = Lmdx({"cc", source.string(), "-o", (user_ / "bad").string()});
  EXPECT_EQ(built.code, 1);
  EXPECT_EQ(built.err, source.string() +
                           ":2:3: error: 'LMDX_barrier' takes 1 argument, not 2: "
                           "LMDX_barrier(name)\n");
  EXPECT_FALSE(fs::exists(user_ / "bad"));
}

}  // namespace
}  // namespace lmdx::tools::testing
