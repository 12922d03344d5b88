#include "config/internal/syntax_errors.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <vector>

namespace lmdx::config::internal {
namespace {

namespace pb = google::protobuf;

class IgnoreErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int /*line*/, pb::io::ColumnNumber /*column*/,
                const std::string& /*message*/) override {}
};

}  // namespace

std::vector<Token> Tokenize(std::string_view text) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  IgnoreErrors ignore;
  pb::io::Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  tokenizer.set_allow_f_after_float(true);
  tokenizer.set_require_space_after_number(false);
  std::vector<Token> tokens;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& t = tokenizer.current();
    tokens.push_back({t.text, t.type, t.line, t.column});
  }
  return tokens;
}

namespace {

bool Before(const Token& token, int line, int column) {
  return token.line < line || (token.line == line && token.column < column);
}

// A block opened and not closed before (line, column): the innermost one, with its field name.
struct OpenBlock {
  std::string field;
  int line;
  int column;
};

std::optional<OpenBlock> InnermostOpenBlock(const std::vector<Token>& tokens, int line, int column,
                                            bool* stray_close) {
  std::vector<OpenBlock> open;
  *stray_close = false;
  for (std::size_t i = 0; i < tokens.size() && Before(tokens[i], line, column + 1); ++i) {
    const Token& token = tokens[i];
    if (token.text == "{") {
      // The field is the identifier before the brace, or before "field: {".
      std::string field = "?";
      if (i >= 1 && tokens[i - 1].type == pb::io::Tokenizer::TYPE_IDENTIFIER) {
        field = tokens[i - 1].text;
      } else if (i >= 2 && tokens[i - 1].text == ":") {
        field = tokens[i - 2].text;
      }
      open.push_back({field, token.line, token.column});
    } else if (token.text == "}") {
      if (open.empty()) {
        *stray_close =
            Before(token, line, column + 1) && token.line == line && token.column == column;
        return std::nullopt;
      }
      open.pop_back();
    }
  }
  if (open.empty()) return std::nullopt;
  return open.back();
}

bool StartsWith(const std::string& text, std::string_view head) {
  return text.compare(0, head.size(), head) == 0;
}

// The token at (line, column), or nullptr.
const Token* TokenAt(const std::vector<Token>& tokens, int line, int column) {
  for (const Token& token : tokens) {
    if (token.line == line && token.column == column) return &token;
  }
  return nullptr;
}

// The identifier before the ':' that comes before (line, column), if there is one: the field
// whose value is at fault.
std::string FieldBefore(const std::vector<Token>& tokens, int line, int column) {
  std::string field;
  for (std::size_t i = 2; i < tokens.size() && Before(tokens[i], line, column + 1); ++i) {
    if (tokens[i - 1].text == ":" && tokens[i - 2].type == pb::io::Tokenizer::TYPE_IDENTIFIER) {
      field = tokens[i - 2].text;
    }
  }
  return field;
}

// The rest of line `line` from column on, up to the first space or brace.
std::string WordAt(std::string_view text, int line, int column) {
  std::size_t at = 0;
  for (int l = 0; l < line && at != std::string_view::npos; ++l) {
    at = text.find('\n', at);
    if (at != std::string_view::npos) ++at;
  }
  if (at == std::string_view::npos) return "";
  at += static_cast<std::size_t>(column);
  std::size_t end = at;
  while (end < text.size() && text[end] != ' ' && text[end] != '\t' && text[end] != '\n' &&
         text[end] != '}' && text[end] != '#') {
    ++end;
  }
  return at < text.size() ? std::string(text.substr(at, end - at)) : "";
}

}  // namespace

std::optional<SyntaxError> ExplainSyntaxError(std::string_view text, int line, int column,
                                              const std::string& message) {
  const std::vector<Token> tokens = Tokenize(text);
  const bool at_end = tokens.empty() || Before(tokens.back(), line, column);
  bool stray_close = false;
  std::optional<OpenBlock> open = InnermostOpenBlock(tokens, line, column, &stray_close);
  if (at_end && open) {
    return SyntaxError{
        open->line, open->column,
        "missing '}' for '" + open->field + "' opened at line " + std::to_string(open->line + 1)};
  }
  if (stray_close) {
    return SyntaxError{line, column, "a '}' with no block open to close (one '}' too many?)"};
  }
  if (StartsWith(message, "Need space between number and identifier")) {
    // The tokenizer reports it at the letters; the value starts at the number before them.
    std::string field = FieldBefore(tokens, line, column);
    int value_column = column;
    for (const Token& token : tokens) {
      if (token.line == line && token.column < column) value_column = token.column;
    }
    std::string value = WordAt(text, line, value_column);
    return SyntaxError{line, value_column,
                       (field.empty() ? std::string("this value") : "'" + field + "'") +
                           " takes a quoted string such as \"" + value + "\", not " + value};
  }
  const Token* token = TokenAt(tokens, line, column);
  if (StartsWith(message, "Expected integer or identifier, got: ") && token != nullptr &&
      token->type == pb::io::Tokenizer::TYPE_STRING) {
    std::string field = FieldBefore(tokens, line, column);
    std::string bare =
        token->text.size() >= 2 ? token->text.substr(1, token->text.size() - 2) : token->text;
    for (char& c : bare) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    return SyntaxError{line, column,
                       (field.empty() ? std::string("this field") : "'" + field + "'") +
                           " takes a name without quotes, such as " + bare + ", not " +
                           token->text};
  }
  std::string previous;
  for (const Token& t : tokens) {
    if (Before(t, line, column)) previous = t.text;
  }
  if (StartsWith(message, "Expected \":\", found ") && token != nullptr && !previous.empty()) {
    return SyntaxError{line, column,
                       "a ':' is missing between '" + previous + "' and its value " + token->text};
  }
  if (StartsWith(message, "Expected \"{\", found ") && token != nullptr && !previous.empty()) {
    return SyntaxError{line, column,
                       "a '{' is missing after '" + previous + "' (a block such as " + previous +
                           " { ... } holds fields, not " + token->text + ")"};
  }
  return std::nullopt;
}

}  // namespace lmdx::config::internal
