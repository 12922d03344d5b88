#ifndef LMDX_PREPROCESSOR_LEXER_H_
#define LMDX_PREPROCESSOR_LEXER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "preprocessor/diagnostic.h"

namespace lmdx::pp {

enum class TokenKind {
  kIdentifier,
  kNumber,
  kString,     // "..." with any prefix, raw strings too
  kCharacter,  // '...' with any prefix
  kPunctuator,
};

// Where a token sits: ordinary code, the body of a #define (shared names are rewritten there
// too, so a macro using one keeps working), or another directive (left alone).
enum class TokenContext { kCode, kDefine };

struct Token {
  TokenKind kind;
  TokenContext context;
  std::size_t begin;  // byte offsets into the source
  std::size_t end;
  Location where;
  std::string_view text;
  bool defined_name = false;  // the name a #define defines
};

// Splits C or C++ source into tokens, skipping comments and whitespace. Directives other than
// #define yield no tokens; #define yields the tokens of its name and body. A comment, string or
// character literal left open is a SourceError at its start.
std::vector<Token> Tokenize(std::string_view source);

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_LEXER_H_
