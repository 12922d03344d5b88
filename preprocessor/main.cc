// lmdxpp: turns an LMDX-annotated C or C++ file into plain C or C++ over <lmdx/lmdx.h>.
//   lmdxpp INPUT [-o OUTPUT] [--name NAME]
// NAME (default: INPUT as given) is the file the output's #line directives name.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "preprocessor/diagnostic.h"
#include "preprocessor/translator.h"

namespace {

constexpr char kUsage[] =
    "usage: lmdxpp INPUT [-o OUTPUT] [--name NAME]\n"
    "Turns an LMDX-annotated C or C++ file into plain C or C++ (docs/preprocessor.md).\n"
    "  -o OUTPUT    where to write the result (default: standard output)\n"
    "  --name NAME  the file name compiler messages should show (default: INPUT)\n";

int Usage(const std::string& problem) {
  std::cerr << "lmdxpp: " << problem << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input;
  std::string output;
  std::string name;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "-o" || arg == "--name") {
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

  std::ifstream in(input, std::ios::binary);
  if (!in) {
    std::cerr << "lmdxpp: cannot read " << input << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  std::ostringstream source;
  source << in.rdbuf();

  std::string result;
  try {
    result = lmdx::pp::Translate(source.str(), name);
  } catch (const lmdx::pp::SourceError& error) {
    std::cerr << lmdx::pp::FormatError(name, error) << "\n";
    return 1;
  }
  if (output.empty()) {
    std::cout << result;
    return std::cout.good() ? 0 : 1;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << result;
  out.close();
  if (!out) {
    std::cerr << "lmdxpp: cannot write " << output << ": " << std::strerror(errno) << "\n";
    std::remove(output.c_str());
    return 1;
  }
  return 0;
}
