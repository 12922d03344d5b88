#include "tools/cc_command.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/tools/subprocess.h"
#include "tests/tools/test_binaries.h"
#include "tools/usage_error.h"

namespace lmdx::tools {
namespace {

using testing::Outcome;
using testing::RunProcess;
using testing::TestBinary;

bool Has(const CommandLine& command, const std::string& word) {
  return std::find(command.begin(), command.end(), word) != command.end();
}

TEST(CcCommandTest, SortsArgumentsByStep) {
  CcRequest r = ParseCcArguments({"main.c", "-O2", "-DN=4", "-I", "inc", "util.cpp", "-o", "prog",
                                  "-lm", "-L/opt/lib", "-Wl,--as-needed", "extra.o", "-v"});
  EXPECT_EQ(r.sources, (std::vector<std::string>{"main.c", "util.cpp"}));
  EXPECT_EQ(r.link_inputs, (std::vector<std::string>{"extra.o"}));
  EXPECT_EQ(r.compile_flags, (std::vector<std::string>{"-DN=4", "-Iinc"}));
  EXPECT_EQ(r.link_flags, (std::vector<std::string>{"-lm", "-L/opt/lib", "-Wl,--as-needed"}));
  EXPECT_EQ(r.common_flags, (std::vector<std::string>{"-O2"}));
  EXPECT_EQ(r.output, "prog");
  EXPECT_TRUE(r.verbose);
}

TEST(CcCommandTest, LanguageByExtension) {
  EXPECT_EQ(SourceLanguage("a.c"), Language::kC);
  for (const char* cxx : {"a.cc", "a.cpp", "a.cxx", "a.C", "dir.c/a.c++"}) {
    EXPECT_EQ(SourceLanguage(cxx), Language::kCxx) << cxx;
  }
  EXPECT_EQ(SourceLanguage("a.h"), std::nullopt);
  EXPECT_EQ(SourceLanguage("liba.a"), std::nullopt);
}

TEST(CcCommandTest, ArgumentErrors) {
  EXPECT_THROW(ParseCcArguments({"main.c"}), UsageError);        // no -o
  EXPECT_THROW(ParseCcArguments({"-o", "prog"}), UsageError);    // no source
  EXPECT_THROW(ParseCcArguments({"main.c", "-o"}), UsageError);  // -o without value
  EXPECT_THROW(ParseCcArguments({"main.c", "-I"}), UsageError);  // -I without value
  EXPECT_THROW(ParseCcArguments({"main.c", "-c", "-o", "m.o"}), UsageError);
}

TEST(CcCommandTest, PlanCompilesEachSourceThenLinksAgainstLmdx) {
  CcRequest r = ParseCcArguments({"main.c", "util.cc", "-O2", "-DX", "-lm", "-o", "prog"});
  CcPlan plan = PlanCc(r, {"/lmdx/include", "/out/api"}, "/tmp/objs");
  ASSERT_EQ(plan.compile.size(), 2u);
  ASSERT_EQ(plan.translate.size(), 2u);
  EXPECT_EQ(plan.translate[0].source, "main.c");
  EXPECT_EQ(plan.translate[0].output, "/tmp/objs/0-main.c");
  EXPECT_EQ(plan.translate[1].output, "/tmp/objs/1-util.cc");
  EXPECT_EQ(plan.compile[0],
            (CommandLine{"gcc", "-std=gnu11", "-I/lmdx/include", "-iquote.", "-DX", "-O2",
                         "-pthread", "-c", "/tmp/objs/0-main.c", "-o", "/tmp/objs/0-main.o"}));
  EXPECT_EQ(plan.compile[1][0], "g++");
  EXPECT_TRUE(Has(plan.compile[1], "-std=c++20"));
  EXPECT_EQ(plan.link, (CommandLine{"g++", "/tmp/objs/0-main.o", "/tmp/objs/1-util.o", "-O2", "-o",
                                    "prog", "-L/out/api", "-Wl,-rpath,/out/api", "-llmdx",
                                    "-Wl,--push-state,--no-as-needed", "-l:libjemalloc.so.2",
                                    "-Wl,--pop-state", "-lm", "-pthread"}));
}

// A .proto becomes C++ classes before anything is compiled; the sources find work.pb.h in the
// object folder, the generated source is compiled and linked, and so is protobuf.
TEST(CcCommandTest, ProtoFilesAreGeneratedCompiledAndLinked) {
  CcRequest r = ParseCcArguments({"msgs/work.proto", "prog.cc", "-O2", "-o", "prog"});
  ASSERT_EQ(r.protos, std::vector<std::string>{"msgs/work.proto"});
  CcPlan plan = PlanCc(r, {"/lmdx/include", "/out/api"}, "/tmp/objs");
  EXPECT_EQ(plan.generate, (std::vector<CommandLine>{{"protoc", "--cpp_out=/tmp/objs",
                                                      "--proto_path=msgs", "msgs/work.proto"}}));
  ASSERT_EQ(plan.compile.size(), 2u);
  EXPECT_TRUE(Has(plan.compile[0], "-I/tmp/objs"));
  EXPECT_EQ(plan.compile[1],
            (CommandLine{"g++", "-std=c++20", "-I/tmp/objs", "-O2", "-pthread", "-c",
                         "/tmp/objs/work.pb.cc", "-o", "/tmp/objs/work.pb.o"}));
  EXPECT_TRUE(Has(plan.link, "/tmp/objs/work.pb.o"));
  EXPECT_TRUE(Has(plan.link, "-lprotobuf"));
  // A .proto alone is no program.
  try {
    ParseCcArguments({"work.proto", "-o", "prog"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a .proto is not a program"), std::string::npos);
  }
}

TEST(CcCommandTest, TranslationsFindQuotedIncludesNextToTheOriginal) {
  CcRequest r = ParseCcArguments({"src/app/main.c", "-o", "prog"});
  CcPlan plan = PlanCc(r, {"/i", "/l"}, "/o");
  EXPECT_TRUE(Has(plan.compile[0], "-iquotesrc/app"));
  EXPECT_TRUE(Has(plan.compile[0], "/o/0-main.c"));
}

TEST(CcCommandTest, NoLmdxppCompilesTheSourcesAsTheyAre) {
  CcRequest r = ParseCcArguments({"main.c", "--no-lmdxpp", "-o", "prog"});
  CcPlan plan = PlanCc(r, {"/i", "/l"}, "/o");
  EXPECT_TRUE(plan.translate.empty());
  EXPECT_TRUE(Has(plan.compile[0], "main.c"));
  EXPECT_FALSE(Has(plan.compile[0], "-iquote."));
}

TEST(CcCommandTest, UserStandardReplacesTheDefaultForItsLanguageOnly) {
  CcRequest r = ParseCcArguments({"a.c", "b.cc", "-std=c++23", "-o", "p"});
  CcPlan plan = PlanCc(r, {"/i", "/l"}, "/o");
  EXPECT_TRUE(Has(plan.compile[0], "-std=gnu11"));
  EXPECT_TRUE(Has(plan.compile[1], "-std=c++23"));
  EXPECT_FALSE(Has(plan.compile[1], "-std=c++20"));
}

TEST(CcCommandTest, ShellQuote) {
  EXPECT_EQ(ShellQuote({"g++", "-DNAME=\"a b\"", "x.cc", "it's"}),
            "g++ '-DNAME=\"a b\"' x.cc 'it'\\''s'");
}

TEST(CcCommandTest, ToolReportsArgumentErrors) {
  std::string lmdx = TestBinary("LMDX_TOOL_BIN");
  Outcome no_output = RunProcess({lmdx, "cc", "main.c"});
  EXPECT_EQ(no_output.code, 2);
  EXPECT_NE(no_output.err.find("lmdx cc: no output given: add -o PROGRAM"), std::string::npos)
      << no_output.err;
  Outcome no_source = RunProcess({lmdx, "cc", "-o", "prog", "-O2"});
  EXPECT_EQ(no_source.code, 2);
  EXPECT_NE(no_source.err.find("lmdx cc: no source files given"), std::string::npos)
      << no_source.err;
  Outcome no_home = RunProcess({lmdx, "cc", "main.c", "-o", "prog"}, {"-LMDX_HOME"});
  EXPECT_EQ(no_home.code, 2);
  EXPECT_NE(no_home.err.find("LMDX_HOME is not set"), std::string::npos) << no_home.err;
}

}  // namespace
}  // namespace lmdx::tools
