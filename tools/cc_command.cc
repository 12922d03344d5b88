#include "tools/cc_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <system_error>

#include "preprocessor/translate_file.h"
#include "preprocessor/translator.h"

#include "tools/exit_status.h"
#include "tools/usage_error.h"

extern char** environ;

namespace lmdx::tools {

namespace fs = std::filesystem;

namespace {

constexpr char kDefaultCStd[] = "-std=gnu11";
constexpr char kDefaultCxxStd[] = "-std=c++20";
constexpr char kHelp[] =
    "Compiles each source (.c as C11, .cc/.cpp/.cxx/.C as C++20) with -I LMDX_HOME/include and "
    "links\nthe program (a .proto is compiled by protoc first: include \"NAME.pb.h\"; protobuf is "
    "linked) with g++ against bazel-bin/api/liblmdx.so. Flags: -D -U -I -include "
    "-isystem go to\ncompilation, -l -L -Wl, to linking, the rest (-O2, -g, -fsanitize=...) to "
    "both.\nEach source goes through lmdxpp first (LMDX_shared, LMDX_thread, ...; "
    "docs/preprocessor.md).\n  -o OUT         the program to write (required)\n  -v, --verbose  "
    "print each compiler command\n  --no-lmdxpp    compile the sources as they are\nExample: lmdx "
    "cc prog.c -O2 -o prog && lmdx run ./prog -n 4";

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Removes its folder and everything in it when it goes out of scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/lmdx-cc-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw UsageError("cannot make a temporary folder in " + pattern + ": " +
                       std::strerror(errno));
    }
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// What the compiler says, in the user's terms: lmdxpp renames `main` (so that LMDX starts first)
// and the compiler reads translations in a temporary folder; both are mapped back.
struct MessageMapping {
  std::vector<std::pair<std::string, std::string>> replacements;  // (what it says, what to say)

  std::string Apply(std::string line) const {
    for (const auto& [from, to] : replacements) {
      for (std::size_t at = line.find(from); at != std::string::npos;
           at = line.find(from, at + to.size())) {
        line.replace(at, from.size(), to);
      }
    }
    return line;
  }
};

// Runs command (found on PATH) and returns its exit status, 128 + signal if it was killed. Its
// standard error passes through mapping on its way to ours.
int RunCompiler(const CommandLine& command, const MessageMapping& mapping) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) {
    std::cerr << "lmdx cc: pipe: " << std::strerror(errno) << "\n";
    return 127;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid;
  int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(err_pipe[0]);
    std::cerr << "lmdx cc: cannot run " << command[0] << ": " << std::strerror(rc) << "\n";
    return 127;
  }
  std::string pending;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(err_pipe[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(chunk, static_cast<std::size_t>(n));
    for (std::size_t end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
      std::cerr << mapping.Apply(pending.substr(0, end)) << '\n';
      pending.erase(0, end + 1);
    }
  }
  if (!pending.empty()) std::cerr << mapping.Apply(pending);
  std::cerr.flush();
  ::close(err_pipe[0]);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  return ExitStatus::FromWaitStatus(ws).ShellCode();
}

// Runs lmdxpp on one source; its messages name the source as the user gave it.
bool TranslateSource(const Translation& translation, bool verbose) {
  if (verbose) {
    std::cerr << "lmdxpp " << ShellQuote({translation.source, "-o", translation.output.string()})
              << std::endl;
  }
  std::optional<std::string> translated =
      pp::TranslateFile(translation.source, translation.source, "lmdx cc", std::cerr);
  return translated &&
         pp::WriteTranslation(translation.output.string(), *translated, "lmdx cc", std::cerr);
}

}  // namespace

std::optional<Language> SourceLanguage(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext == ".c") return Language::kC;
  if (ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".c++" || ext == ".C") {
    return Language::kCxx;
  }
  return std::nullopt;
}

CcRequest ParseCcArguments(const std::vector<std::string>& args) {
  CcRequest request;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // An option whose value may be attached (-Ifoo) or the next argument (-I foo).
    auto value_of = [&](const char* option) -> std::string {
      std::size_t len = std::strlen(option);
      if (arg.size() > len) return arg.substr(len);
      if (i + 1 >= args.size()) throw UsageError(std::string(option) + " needs a value");
      return args[++i];
    };
    if (arg == "-v" || arg == "--verbose") {
      request.verbose = true;
    } else if (arg == "--no-lmdxpp") {
      request.preprocess = false;
    } else if (StartsWith(arg, "-o")) {
      request.output = value_of("-o");
    } else if (arg == "-c" || arg == "-S" || arg == "-E") {
      throw UsageError(arg + " is not supported: lmdx cc always builds a whole program");
    } else if (StartsWith(arg, "-std=")) {
      bool cxx = arg.find("++") != std::string::npos;
      (cxx ? request.cxx_std : request.c_std) = arg;
    } else if (arg == "-include" || arg == "-isystem") {
      const std::string& option = arg;
      request.compile_flags.push_back(option);
      request.compile_flags.push_back(value_of(option.c_str()));
    } else if (StartsWith(arg, "-I") || StartsWith(arg, "-D") || StartsWith(arg, "-U")) {
      std::string option = arg.substr(0, 2);
      request.compile_flags.push_back(option + value_of(option.c_str()));
    } else if (StartsWith(arg, "-l") || StartsWith(arg, "-L")) {
      std::string option = arg.substr(0, 2);
      request.link_flags.push_back(option + value_of(option.c_str()));
    } else if (arg == "-Xlinker") {
      request.link_flags.push_back(arg);
      request.link_flags.push_back(value_of("-Xlinker"));
    } else if (StartsWith(arg, "-Wl,") || arg == "-rdynamic" || arg == "-static-libstdc++") {
      request.link_flags.push_back(arg);
    } else if (!arg.empty() && arg[0] == '-') {
      request.common_flags.push_back(arg);
    } else if (fs::path(arg).extension() == ".proto") {
      request.protos.push_back(arg);
    } else if (SourceLanguage(arg)) {
      request.sources.push_back(arg);
    } else {
      request.link_inputs.push_back(arg);  // an object or a library given by path
    }
  }
  if (request.sources.empty()) {
    throw UsageError("no source files given (.c, .cc, .cpp, .cxx or .C" +
                     std::string(request.protos.empty() ? "" : "; a .proto is not a program") +
                     "); see lmdx cc --help");
  }
  if (request.output.empty()) {
    throw UsageError("no output given: add -o PROGRAM; see lmdx cc --help");
  }
  return request;
}

CcLayout FindCcLayout(const Paths& paths) {
  if (!paths.installed_prefix().empty()) {
    return {paths.installed_prefix() / "include", paths.installed_prefix() / "lib"};
  }
  if (paths.home().empty()) {
    throw UsageError(
        "LMDX_HOME is not set; run lmdx cc through the ./lmdx script, or install LMDX (./lmdx "
        "install) and run the installed lmdx");
  }
  fs::path lib = paths.bin() / "api" / "liblmdx.so";
  std::error_code ec;
  if (!fs::exists(lib, ec)) {
    throw UsageError("the LMDX library is not built (no " + lib.string() + "); run ./lmdx build");
  }
  // The real folder, not bazel-bin: the symlink follows whichever configuration built last.
  return {paths.home() / "include", fs::canonical(lib, ec).parent_path()};
}

CcPlan PlanCc(const CcRequest& request, const CcLayout& layout, const fs::path& object_dir) {
  CcPlan plan;
  plan.link = {"g++"};
  // protoc writes work.pb.h and work.pb.cc into the object folder, which every compilation then
  // searches, so that `#include "work.pb.h"` finds them; imports resolve next to each .proto.
  std::vector<std::string> generated;
  for (const std::string& proto : request.protos) {
    fs::path folder = fs::path(proto).parent_path();
    if (folder.empty()) folder = ".";
    plan.generate.push_back(
        {"protoc", "--cpp_out=" + object_dir.string(), "--proto_path=" + folder.string(), proto});
    generated.push_back((object_dir / fs::path(proto).stem()).string() + ".pb.cc");
  }
  for (std::size_t i = 0; i < request.sources.size(); ++i) {
    const std::string& source = request.sources[i];
    bool c = SourceLanguage(source) == Language::kC;
    // The index keeps files apart when two sources share a file name (a/x.c and b/x.c).
    std::string base = std::to_string(i) + "-" + fs::path(source).stem().string();
    fs::path object = object_dir / (base + ".o");
    std::string compiled = source;
    if (request.preprocess) {
      fs::path translated = object_dir / (base + fs::path(source).extension().string());
      plan.translate.push_back({source, translated});
      compiled = translated.string();
    }
    CommandLine compile = {c ? "gcc" : "g++"};
    const std::string& user_std = c ? request.c_std : request.cxx_std;
    compile.push_back(user_std.empty() ? (c ? kDefaultCStd : kDefaultCxxStd) : user_std);
    compile.push_back("-I" + layout.include_dir.string());
    if (request.preprocess) {
      // Quoted includes are searched next to the original, not next to its translation.
      fs::path folder = fs::path(source).parent_path();
      compile.push_back("-iquote" + (folder.empty() ? std::string(".") : folder.string()));
    }
    if (!generated.empty()) compile.push_back("-I" + object_dir.string());
    compile.insert(compile.end(), request.compile_flags.begin(), request.compile_flags.end());
    compile.insert(compile.end(), request.common_flags.begin(), request.common_flags.end());
    compile.push_back("-pthread");
    compile.insert(compile.end(), {"-c", compiled, "-o", object.string()});
    plan.compile.push_back(std::move(compile));
    plan.link.push_back(object.string());
  }
  for (const std::string& source : generated) {
    std::string object = source.substr(0, source.size() - 3) + ".o";  // work.pb.cc -> work.pb.o
    const std::string& user_std = request.cxx_std;
    CommandLine compile = {"g++", user_std.empty() ? kDefaultCxxStd : user_std,
                           "-I" + object_dir.string()};
    compile.insert(compile.end(), request.common_flags.begin(), request.common_flags.end());
    compile.insert(compile.end(), {"-pthread", "-c", source, "-o", object});
    plan.compile.push_back(std::move(compile));
    plan.link.push_back(object);
  }
  CommandLine& link = plan.link;
  link.insert(link.end(), request.link_inputs.begin(), request.link_inputs.end());
  link.insert(link.end(), request.common_flags.begin(), request.common_flags.end());
  link.insert(link.end(),
              {"-o", request.output, "-L" + layout.lib_dir.string(),
               "-Wl,-rpath," + layout.lib_dir.string(), "-llmdx",
               // LMDX's shared heap is jemalloc, which also brings malloc and
               // operator new: as a direct dependency ahead of libc and libstdc++ it
               // serves the whole program, so no block is freed by another allocator.
               // By its soname, which the runtime package has without the -dev one.
               "-Wl,--push-state,--no-as-needed", "-l:libjemalloc.so.2", "-Wl,--pop-state"});
  link.insert(link.end(), request.link_flags.begin(), request.link_flags.end());
  if (!generated.empty()) link.push_back("-lprotobuf");
  link.push_back("-pthread");
  return plan;
}

std::string ShellQuote(const CommandLine& command) {
  std::string out;
  for (const std::string& word : command) {
    if (!out.empty()) out += ' ';
    bool plain = !word.empty() && word.find_first_not_of(
                                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789-_=+./,:@%") == std::string::npos;
    if (plain) {
      out += word;
      continue;
    }
    out += '\'';
    for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += '\'';
  }
  return out;
}

CLI::App* AddCcCommand(CLI::App& app) {
  CLI::App* cc = app.add_subcommand("cc", "Compile and link a C or C++ program against LMDX");
  cc->footer(std::string("lmdx cc SOURCES... -o OUT [-v] [compiler flags]\n") + kHelp);
  // Compiler flags look like options CLI11 does not know; hand everything to ParseCcArguments.
  cc->prefix_command();
  return cc;
}

int CcCommand(const std::vector<std::string>& args, const Paths& paths) {
  CcRequest request = ParseCcArguments(args);
  CcLayout layout = FindCcLayout(paths);
  TempDir objects;
  CcPlan plan = PlanCc(request, layout, objects.path());
  for (const Translation& translation : plan.translate) {
    if (!TranslateSource(translation, request.verbose)) return 1;
  }
  std::vector<CommandLine> steps = plan.generate;
  steps.insert(steps.end(), plan.compile.begin(), plan.compile.end());
  steps.push_back(plan.link);
  MessageMapping mapping;
  for (const Translation& translation : plan.translate) {
    mapping.replacements.emplace_back(translation.output.string(), translation.source);
  }
  if (request.preprocess) {
    // Quoted both ways, as gcc quotes in UTF-8 and C locales; only whole names are renamed.
    for (const char* quote : {"\u2018%s\u2019", "'%s'", "`%s'"}) {
      std::string from = quote;
      std::string to = quote;
      from.replace(from.find("%s"), 2, pp::kRenamedMain);
      to.replace(to.find("%s"), 2, "main");
      mapping.replacements.emplace_back(from, to);
    }
  }
  for (const CommandLine& step : steps) {
    if (request.verbose) std::cerr << ShellQuote(step) << std::endl;
    if (int status = RunCompiler(step, mapping); status != 0) return status;
  }
  return 0;
}

}  // namespace lmdx::tools
