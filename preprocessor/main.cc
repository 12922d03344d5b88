// lmdxpp: turns an LMDX-annotated C or C++ file into plain C or C++ over <lmdx/lmdx.h>.
//   lmdxpp INPUT [-o OUTPUT] [--name NAME] [--no-notes]
// NAME (default: INPUT as given) is the file the output's #line directives name.
#include <iostream>
#include <optional>
#include <string>

#include "preprocessor/translate_file.h"

namespace {

constexpr char kUsage[] =
    "usage: lmdxpp INPUT [-o OUTPUT] [--name NAME] [--no-notes]\n"
    "Turns an LMDX-annotated C or C++ file into plain C or C++ (docs/preprocessor.md).\n"
    "  -o OUTPUT    where to write the result (default: standard output)\n"
    "  --name NAME  the file name compiler messages should show (default: INPUT)\n"
    "  --no-notes   do not say what lmdxpp inserted (the main that starts LMDX)\n";

int Usage(const std::string& problem) {
  std::cerr << "lmdxpp: " << problem << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input;
  std::string output;
  std::string name;
  bool notes = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--no-notes") {
      notes = false;
    } else if (arg == "-o" || arg == "--name") {
      if (i + 1 >= argc) return Usage(arg + " needs a value");
      (arg == "-o" ? output : name) = argv[++i];
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return Usage("unknown option " + arg);
    } else if (input.empty()) {
      input = arg;
    } else {
      return Usage("one input at a time (got " + input + " and " + arg.append(")"));
    }
  }
  if (input.empty()) return Usage("no input file given");
  if (name.empty()) name = input;

  std::optional<std::string> result =
      lmdx::pp::TranslateFile(input, name, "lmdxpp", std::cerr, notes);
  if (!result) return 1;
  if (output.empty()) {
    std::cout << *result;
    return std::cout.good() ? 0 : 1;
  }
  return lmdx::pp::WriteTranslation(output, *result, "lmdxpp", std::cerr) ? 0 : 1;
}
