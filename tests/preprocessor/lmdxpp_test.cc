// The lmdxpp command: where its output goes, the compiler-style error and exit status for
// malformed input, and usage errors.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/tools/subprocess.h"

namespace lmdx::tools::testing {
namespace {

namespace fs = std::filesystem;

class LmdxppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = fs::path(tmp != nullptr ? tmp : "/tmp") /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_);
  }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  static Outcome Lmdxpp(std::vector<std::string> args) {
    args.insert(args.begin(), std::getenv("LMDXPP"));
    return Subprocess(args).Finish();
  }

  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path dir_;
};

TEST_F(LmdxppTest, WritesToStandardOutputByDefault) {
  std::string input = Write("a.c", "LMDX_thread t(void *a) { return a; }\n");
  Outcome run = Lmdxpp({input});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("#include <lmdx/lmdx.h>\n#line 1 \"" + input + "\"\n", 0), 0u) << run.out;
  EXPECT_NE(run.out.find("void * t(void *a) { return a; return (void *)0; }"), std::string::npos)
      << run.out;
  EXPECT_EQ(run.err, "");
}

TEST_F(LmdxppTest, WritesTheOutputFileWithTheNameGiven) {
  std::string input = Write("b.c", "int x;\n");
  fs::path output = dir_ / "b.out.c";
  Outcome run = Lmdxpp({input, "-o", output.string(), "--name", "src/b.c"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(Read(output), "#include <lmdx/lmdx.h>\n#line 1 \"src/b.c\"\nint x;\n");
}

TEST_F(LmdxppTest, MalformedInputIsAnErrorInTheCompilersFormat) {
  std::string input = Write("bad.c", "int ok;\nLMDX_shared int x = 5;\n");
  fs::path output = dir_ / "bad.out.c";
  Outcome run = Lmdxpp({input, "-o", output.string(), "--name", "src/bad.c"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "src/bad.c:2:19: error: the shared variable 'x' cannot have an initializer: it "
            "starts as zeros on every node; assign its first value in main\n");
  EXPECT_FALSE(fs::exists(output));
}

TEST_F(LmdxppTest, UnreadableInputAndBadUsage) {
  Outcome missing = Lmdxpp({(dir_ / "none.c").string()});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("cannot read " + (dir_ / "none.c").string()), std::string::npos)
      << missing.err;
  Outcome no_input = Lmdxpp({});
  EXPECT_EQ(no_input.code, 2);
  EXPECT_NE(no_input.err.find("no input file given"), std::string::npos) << no_input.err;
  Outcome unknown = Lmdxpp({"--frobnicate", "x.c"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown option --frobnicate"), std::string::npos) << unknown.err;
  Outcome two = Lmdxpp({"a.c", "b.c"});
  EXPECT_EQ(two.code, 2);
  Outcome dangling = Lmdxpp({"a.c", "-o"});
  EXPECT_EQ(dangling.code, 2);
  EXPECT_NE(dangling.err.find("-o needs a value"), std::string::npos) << dangling.err;
}

}  // namespace
}  // namespace lmdx::tools::testing
