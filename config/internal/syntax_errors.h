// The configuration parser's syntax errors in the user's terms. Protobuf's text-format parser
// names tokens ("Expected identifier, got: " at the end of a file with an unclosed block); a user
// needs the mistake ("missing '}' for 'dsm' opened at line 1") and where to fix it.
#ifndef LMDX_CONFIG_INTERNAL_SYNTAX_ERRORS_H_
#define LMDX_CONFIG_INTERNAL_SYNTAX_ERRORS_H_

#include <google/protobuf/io/tokenizer.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmdx::config::internal {

struct Token {
  std::string text;
  google::protobuf::io::Tokenizer::TokenType type;
  int line;  // 0-based; columns count a tab to the next multiple of 8, as protobuf's parser does
  int column;
};

// Every token of a configuration text, read as the text-format parser reads it (errors ignored:
// the parser reports them).
std::vector<Token> Tokenize(std::string_view text);

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
