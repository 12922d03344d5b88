// lmdxpp's translation: golden outputs for each construct (testdata/NAME and NAME.golden; run
// tests/preprocessor/update_golden.sh after an intended change and review the diff), and the
// error, with its line and column, for each kind of malformed input.
#include "preprocessor/translator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace lmdx::pp {
namespace {

constexpr char kTestData[] = "tests/preprocessor/testdata/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class GoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenTest, OutputMatchesTheGoldenFile) {
  std::string input = std::string(kTestData) + GetParam();
  std::string expected = ReadFile(input + ".golden");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(Translate(ReadFile(input), input), expected);
}

INSTANTIATE_TEST_SUITE_P(Constructs, GoldenTest,
                         ::testing::Values("shared.c", "thread.c", "task.c", "sugar.c",
                                           "passthrough.c", "namespace.cc"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = std::isalnum(c) ? c : '_';
                           return name;
                         });

// The input line number at which the output has `text` as a whole line (0 when it has none):
// two lines of prologue (#include and #line), then the input's lines in place.
int InputLineOf(const std::string& out, const std::string& text) {
  std::istringstream lines(out);
  std::string line;
  int found = 0;
  for (int number = -1; std::getline(lines, line); ++number) {
    if (line == text) found = number;
  }
  return found;
}

TEST(TranslatorTest, LinesKeepTheirNumbers) {
  std::string source =
      "LMDX_shared int\n  spread[2]\n  [3];\nint after_declaration;\n"
      "LMDX_thread t(void *a) {\n}\nint after_thread;\n";
  std::string out = Translate(source, "x.c");
  EXPECT_EQ(InputLineOf(out, "int after_declaration;"), 4);
  EXPECT_EQ(InputLineOf(out, "int after_thread;"), 7);
}

// A type written over several lines (comments and a preprocessor line in it too) shared by
// several declarators: it is written once, in a typedef, so the lines after keep their numbers.
// (Repeated for each declarator, it used to make the padding negative and end lmdxpp with
// std::length_error.)
TEST(TranslatorTest, AMultiLineTypeSharedByDeclaratorsKeepsTheLinesAfter) {
  std::string source =
      "LMDX_shared struct {\n  int a; // the count\n#ifdef WIDE\n  long wide;\n#endif\n"
      "  char b;\n} one, two[4]\n  [2], three;\n"
      "int after_declaration;\n";
  std::string out = Translate(source, "x.c");
  EXPECT_EQ(InputLineOf(out, "int after_declaration;"), 9) << out;
  // The type as written, preprocessor line included, once.
  EXPECT_NE(out.find("typedef struct {\n  int a; // the count\n#ifdef WIDE\n  long wide;\n#endif\n"
                     "  char b;\n} lmdx_shared_type_one; "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("static lmdx_shared_type_one (*lmdx_shared_two)[4]\n  [2];"),
            std::string::npos)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'),
            std::count(source.begin(), source.end(), '\n') + 2)
      << out;
}

TEST(TranslatorTest, NameInLineDirectiveIsEscaped) {
  std::string out = Translate("int x;\n", "dir \"q\"\\x.c");
  EXPECT_NE(out.find("#line 1 \"dir \\\"q\\\"\\\\x.c\"\n"), std::string::npos) << out;
}

struct BadInput {
  const char* source;
  int line;
  int column;
  const char* message;  // a part of the error's text
};

class ErrorTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(ErrorTest, NamesTheProblemWithLineAndColumn) {
  const BadInput& bad = GetParam();
  try {
    std::string out = Translate(bad.source, "bad.c");
    ADD_FAILURE() << "accepted:\n" << bad.source << "\nas:\n" << out;
  } catch (const SourceError& error) {
    EXPECT_EQ(error.where().line, bad.line) << error.what();
    EXPECT_EQ(error.where().column, bad.column) << error.what();
    EXPECT_NE(std::string(error.what()).find(bad.message), std::string::npos)
        << "got: " << error.what() << "\nwanted: " << bad.message;
    std::string formatted = FormatError("bad.c", error);
    EXPECT_EQ(formatted.rfind("bad.c:" + std::to_string(bad.line) + ":" +
                                  std::to_string(bad.column) + ": error: ",
                              0),
              0u)
        << formatted;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ErrorTest,
    ::testing::Values(
        BadInput{"void f(void) { LMDX_shared int x; }", 1, 16, "belongs at file scope"},
        BadInput{"struct s {\n  LMDX_shared int x;\n};", 2, 3, "belongs at file scope"},
        BadInput{"LMDX_shared int x = 5;", 1, 19, "cannot have an initializer"},
        BadInput{"LMDX_shared int a[4][];", 1, 21, "needs every size"},
        BadInput{"LMDX_shared x;", 1, 13, "has no type"},
        BadInput{"LMDX_shared int x\nint y;", 2, 1,
                 "expected ';' after the LMDX_shared declaration of 'x'"},
        BadInput{"LMDX_shared int a, 3;", 1, 20, "expected the name of a shared variable"},
        BadInput{"LMDX_shared static int x;", 1, 13, "'static' cannot apply"},
        BadInput{"LMDX_shared int f(void);", 1, 17, "declares variables"},
        BadInput{"LMDX_shared int;", 1, 16, "expected the name of a shared variable"},
        BadInput{"LMDX_shared int x;\nLMDX_shared long x;", 2, 18,
                 "declared twice (first at line 1)"},
        BadInput{"LMDX_thread t(int n) { return 0; }", 1, 15, "takes one 'void *' argument"},
        BadInput{"LMDX_thread t(void *a, void *b) {}", 1, 15, "takes one 'void *' argument"},
        BadInput{"LMDX_thread (void *a) {}", 1, 13, "expected the thread function's name"},
        BadInput{"LMDX_thread t {}", 1, 15, "expected '(' after LMDX_thread t"},
        BadInput{"LMDX_thread t(void *a) int x;", 1, 24, "expected '{' or ';'"},
        BadInput{"void f(void) {\n  LMDX_thread t(void *a);\n}", 2, 3, "belongs at file scope"},
        BadInput{"LMDX_task t(int n) {}", 1, 13, "a task takes one pointer to its arguments"},
        BadInput{"LMDX_task t(struct a *x, int n) {}", 1, 13,
                 "a task takes one pointer to its arguments"},
        BadInput{"LMDX_task (struct a *x) {}", 1, 11, "expected the task function's name"},
        BadInput{"void f(void) {\n  LMDX_task t(struct a *x);\n}", 2, 3, "belongs at file scope"},
        BadInput{"LMDX_task t(struct a *x);\nvoid f(void) { t(); }", 2, 16,
                 "a call of the task 't' takes one pointer to its arguments: t(&args)"},
        BadInput{"void f(void) { LMDX_barrier(a, b); }", 1, 16,
                 "'LMDX_barrier' takes 1 argument, not 2"},
        BadInput{"void f(char *n) { LMDX_barrier(n + 1); }", 1, 32,
                 "must be an identifier or a string literal"},
        BadInput{"void f(void) { LMDX_barrier; }", 1, 16, "needs its arguments"},
        BadInput{"void f(void) { LMDX_start_thread(); }", 1, 16, "takes 1 or 2 arguments, not 0"},
        BadInput{"void f(void) { LMDX_exit_thread(a, b); }", 1, 16,
                 "takes 0 or 1 arguments, not 2"},
        BadInput{"void f(void) { LMDX_barrier_init(a, ); }", 1, 37, "argument 2 is empty"},
        BadInput{"LMDX_shraed int x;", 1, 1,
                 "unknown LMDX construct 'LMDX_shraed'; did you mean 'LMDX_shared'?"},
        BadInput{"void f(void) { LMDX_sema_p(s); }", 1, 16, "did you mean 'LMDX_sema_P'?"},
        BadInput{"LMDX_shared int grid[4];\nvoid f(void) {\n  int grid = 0;\n}", 3, 7,
                 "'grid' is declared here but names the LMDX_shared variable of line 1"},
        BadInput{"LMDX_shared size_t n;\nvoid f(size_t n);", 2, 15,
                 "names the LMDX_shared variable"},
        BadInput{"LMDX_shared int v[2];\nstruct s {\n  float *v;\n};", 3, 10,
                 "names the LMDX_shared variable"},
        BadInput{"void f(void) { LMDX_sema_P(s; }", 1, 27, "'(' is never closed"},
        BadInput{"int x;\n/* open", 2, 1, "unterminated comment"},
        BadInput{"const char *s = R\"x(never closed", 1, 17, "unterminated raw string"},
        BadInput{"int x;\nconst char *s = \"no end;\nint y;", 2, 17,
                 "missing terminating '\"' character"},
        BadInput{"char c = 'x;", 1, 10, "missing terminating ' character"},
        BadInput{"int main(int argc) { return 0; }", 1, 9,
                 "main takes no parameters, (argc, argv) or (argc, argv, envp)"}));

TEST(TranslatorTest, ProgramsThatStartLmdxThemselvesKeepTheirMain) {
  std::string source = "int main(int c, char **v) { lmdx_init_spmd(&c, &v); return 0; }\n";
  std::string out = Translate(source, "spmd.c");
  EXPECT_EQ(out.find("lmdx_program_main"), std::string::npos) << out;
  EXPECT_NE(out.find(source), std::string::npos) << out;
}

// The C++ spelling and a call from a function of the program's own count too: a second init
// would fail with "LMDX was already initialized".
TEST(TranslatorTest, ProgramsThatStartLmdxInCxxOrFromAHelperKeepTheirMain) {
  for (const char* source : {"int main(int c, char **v) { lmdx::init_spmd(c, v); return 0; }\n",
                             "int main(int c, char **v) { lmdx::init(c, v); return 0; }\n",
                             "static void start(int *c, char ***v) { lmdx_init_spmd(c, v); }\n"
                             "int main(int c, char **v) { start(&c, &v); return 0; }\n"}) {
    std::string out = Translate(source, "spmd.cc");
    EXPECT_EQ(out.find("lmdx_program_main"), std::string::npos) << out;
    EXPECT_NE(out.find(source), std::string::npos) << out;
  }
  // A name of the program's own that merely contains init is no start.
  std::string out = Translate("int main() { mine::init(); return 0; }\n", "own.cc");
  EXPECT_NE(out.find("lmdx_program_main"), std::string::npos) << out;
}

// The main lmdxpp generates says so at build time, and tells the runtime (for deadlock reports).
TEST(TranslatorTest, AGeneratedMainIsNotedWhereTheProgramsMainIs) {
  std::vector<SourceNote> notes;
  std::string out =
      Translate("#include <stdio.h>\n\nint main(void) { return 0; }\n", "t.c", &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].where.line, 3);
  EXPECT_EQ(notes[0].where.column, 5);
  EXPECT_EQ(FormatNote("t.c", notes[0])
                .rfind("t.c:3:5: note: lmdxpp starts LMDX before this "
                       "main with lmdx_init",
                       0),
            0u);
  EXPECT_NE(out.find("  lmdx_init_from_lmdxpp(&argc, &argv, \"t.c\");\n"), std::string::npos)
      << out;
  Translate("int main(int c, char **v) { lmdx_init_spmd(&c, &v); return 0; }\n", "s.c", &notes);
  EXPECT_TRUE(notes.empty());
}

// Flowing off the end of main returns 0, and off the end of the function lmdxpp makes of it too
// (without it g++'s code for a C++ main with no return crashed at exit).
TEST(TranslatorTest, MainWithNoReturnStillReturnsZero) {
  std::string out = Translate("int main() { int x = 1; (void)x; }\n", "noreturn.cc");
  EXPECT_NE(out.find("int lmdx_program_main() { int x = 1; (void)x; return 0; }"),
            std::string::npos)
      << out;
}

TEST(TranslatorTest, VoidMainStillEndsTheJobWithStatusZero) {
  std::string out = Translate("void main(void) { }\n", "v.c");
  EXPECT_NE(out.find("void lmdx_program_main(void)"), std::string::npos) << out;
  EXPECT_NE(out.find("  lmdx_program_main();\n  return 0;\n"), std::string::npos) << out;
}

TEST(TranslatorTest, TextUnderIfZeroIsNotRead) {
  std::string source =
      "#if 0\nLMDX_shared int x = 1; 'open\n#ifdef A\n#endif\n#else\nLMDX_shared int y;\n"
      "#endif\nint *z = &y;\n#if 0 /* off */\nLMDX_barrier(a, b);\n#elif B\nint w = y;\n#endif\n";
  std::string out = Translate(source, "if0.c");
  EXPECT_NE(out.find("LMDX_shared int x = 1; 'open\n"), std::string::npos) << out;
  EXPECT_NE(out.find("static int *lmdx_shared_y;"), std::string::npos) << out;
  EXPECT_NE(out.find("int *z = &(*lmdx_shared_y);"), std::string::npos) << out;
  EXPECT_NE(out.find("LMDX_barrier(a, b);"), std::string::npos) << out;
  EXPECT_NE(out.find("int w = (*lmdx_shared_y);"), std::string::npos) << out;
}

TEST(TranslatorTest, MacrosTheFileDefinesAreNotConstructs) {
  std::string source = "#define LMDX_mine(x) (x)\nint y = LMDX_mine(1);\n";
  EXPECT_NE(Translate(source, "m.c").find("int y = LMDX_mine(1);"), std::string::npos);
}

}  // namespace
}  // namespace lmdx::pp
