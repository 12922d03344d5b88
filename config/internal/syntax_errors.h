// The configuration parser's syntax errors in the user's terms. Protobuf's text-format parser
// names tokens ("Expected identifier, got: " at the end of a file with an unclosed block); a user
// needs the mistake ("missing '}' for 'dsm' opened at line 1") and where to fix it.
#ifndef LMDX_CONFIG_INTERNAL_SYNTAX_ERRORS_H_
#define LMDX_CONFIG_INTERNAL_SYNTAX_ERRORS_H_

#include <optional>
#include <string>
#include <string_view>

namespace lmdx::config::internal {

struct SyntaxError {
  int line = -1;  // 0-based, as protobuf counts
  int column = -1;
  std::string message;
};

// The mistake behind protobuf's `message` at (line, column) of `text`, when it is one of the
// common ones: a block left open, a '}' with no block open, a size or other string value without
// quotes, an enumeration value in quotes, a field name without ':' before its value, a block's
// name without '{'. nullopt keeps protobuf's words.
std::optional<SyntaxError> ExplainSyntaxError(std::string_view text, int line, int column,
                                              const std::string& message);

}  // namespace lmdx::config::internal

#endif  // LMDX_CONFIG_INTERNAL_SYNTAX_ERRORS_H_
