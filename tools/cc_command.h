#ifndef LMDX_TOOLS_CC_COMMAND_H_
#define LMDX_TOOLS_CC_COMMAND_H_

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tools/paths.h"

namespace lmdx::tools {

// `lmdx cc SOURCES... -o OUT [compiler flags]`: compiles and links a C or C++ program against
// LMDX without Bazel. Every source goes through lmdxpp (LMDX_shared, LMDX_thread, ...; see
// docs/preprocessor.md), is compiled to an object, and the objects are linked in a last step.

using CommandLine = std::vector<std::string>;

enum class Language { kC, kCxx };
// By extension: .c is C; .cc, .cpp, .cxx, .c++ and .C are C++; anything else is not a source.
std::optional<Language> SourceLanguage(const std::string& path);

// What the user asked for, sorted by where each piece goes.
struct CcRequest {
  std::vector<std::string> sources;        // in the order given
  std::vector<std::string> protos;         // .proto files: protoc makes their C++ classes
  std::vector<std::string> link_inputs;    // objects and libraries given by path
  std::vector<std::string> compile_flags;  // -D, -U, -I, -include, -isystem
  std::vector<std::string> link_flags;     // -l, -L, -Wl,..., -Xlinker
  std::vector<std::string> common_flags;   // everything else (-O2, -g, -fsanitize=...): both steps
  std::string c_std;                       // a -std= for C given by the user, else empty
  std::string cxx_std;                     // a -std= for C++ given by the user, else empty
  std::string output;
  bool verbose = false;
  bool preprocess = true;  // --no-lmdxpp compiles the sources as they are
};

// Throws UsageError for a missing -o, no sources, or an option missing its value. A .proto among
// the arguments is compiled by protoc into C++ classes that the sources include by its name
// ("work.pb.h"), and the program is linked with protobuf.
CcRequest ParseCcArguments(const std::vector<std::string>& args);

// Where the LMDX headers and library are.
struct CcLayout {
  std::filesystem::path include_dir;  // LMDX_HOME/include
  std::filesystem::path lib_dir;      // real path of the folder holding liblmdx.so
};
// Throws UsageError when LMDX_HOME is unknown or liblmdx.so is not built.
CcLayout FindCcLayout(const Paths& paths);

// A source translated by lmdxpp before it is compiled.
struct Translation {
  std::string source;
  std::filesystem::path output;
};

struct CcPlan {
  std::vector<CommandLine> generate;   // protoc, one per .proto, before anything is compiled
  std::vector<Translation> translate;  // one per source, unless --no-lmdxpp
  std::vector<CommandLine> compile;    // one per source, then one per generated .pb.cc
  CommandLine link;
};
// The translations and compiler command lines for a request; translations and objects go to
// object_dir.
CcPlan PlanCc(const CcRequest& request, const CcLayout& layout,
              const std::filesystem::path& object_dir);

// A command line as a shell would need it typed, for --verbose.
std::string ShellQuote(const CommandLine& command);

CLI::App* AddCcCommand(CLI::App& app);
// Runs the plan; returns 0, or the exit status of the first compiler command that failed.
int CcCommand(const std::vector<std::string>& args, const Paths& paths);

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_CC_COMMAND_H_
