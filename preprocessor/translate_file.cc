#include "preprocessor/translate_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "preprocessor/diagnostic.h"
#include "preprocessor/translator.h"

namespace lmdx::pp {

std::optional<std::string> TranslateFile(const std::string& input, const std::string& name,
                                         std::string_view tool, std::ostream& errors, bool notes) {
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    errors << tool << ": cannot read " << input << ": " << std::strerror(errno) << "\n";
    return std::nullopt;
  }
  std::ostringstream source;
  source << in.rdbuf();
  try {
    std::vector<SourceNote> inserted;
    std::string out = Translate(source.str(), name, &inserted);
    if (notes) {
      for (const SourceNote& note : inserted) errors << FormatNote(name, note) << "\n";
    }
    return out;
  } catch (const SourceError& error) {
    errors << FormatError(name, error) << "\n";
    return std::nullopt;
  }
}

bool WriteTranslation(const std::string& path, const std::string& text, std::string_view tool,
                      std::ostream& errors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (out) return true;
  errors << tool << ": cannot write " << path << ": " << std::strerror(errno) << "\n";
  std::remove(path.c_str());
  return false;
}

}  // namespace lmdx::pp
