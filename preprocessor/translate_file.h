#ifndef LMDX_PREPROCESSOR_TRANSLATE_FILE_H_
#define LMDX_PREPROCESSOR_TRANSLATE_FILE_H_

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace lmdx::pp {

// Reads the file input and translates it (Translate), its #line and messages naming it `name`.
// On failure writes one line to errors (prefixed "tool: " for an unreadable file, in the
// compiler's format for malformed input) and returns nothing. With notes, what lmdxpp inserted
// is said on errors too, as compiler notes.
std::optional<std::string> TranslateFile(const std::string& input, const std::string& name,
                                         std::string_view tool, std::ostream& errors,
                                         bool notes = true);

// Writes a translation to path; on failure says so on errors and leaves no partial file.
bool WriteTranslation(const std::string& path, const std::string& text, std::string_view tool,
                      std::ostream& errors);

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_TRANSLATE_FILE_H_
