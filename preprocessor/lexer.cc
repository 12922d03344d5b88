#include "preprocessor/lexer.h"

#include <algorithm>
#include <cctype>

namespace lmdx::pp {
namespace {

bool IsIdentifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}
bool IsIdentifierChar(char c) {
  return IsIdentifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Prefixes that turn a following quote into an encoded or raw literal: u8"..", LR"(..)".
bool IsLiteralPrefix(std::string_view word) {
  static constexpr std::string_view kPrefixes[] = {"L",  "u",  "U",  "u8", "R",
                                                   "LR", "uR", "UR", "u8R"};
  return std::find(std::begin(kPrefixes), std::end(kPrefixes), word) != std::end(kPrefixes);
}

// Operators whose characters must stay together for the rewriting rules: member access and
// scope are how a shared name is told apart from a member of the same name.
constexpr std::string_view kLongPunctuators[] = {"...", "->", "::", "##"};

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> Run() {
    bool line_start = true;  // only whitespace and comments so far on this line
    while (pos_ < source_.size()) {
      char c = source_[pos_];
      if (c == '\n') {
        line_start = true;
        ++pos_;
      } else if (c == '\\' && Peek(1) == '\n') {
        pos_ += 2;  // a line splice outside directives joins two lines of code
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '/' && (Peek(1) == '/' || Peek(1) == '*')) {
        SkipComment();
      } else if (c == '#' && line_start) {
        Directive();
        line_start = true;
      } else {
        line_start = false;
        if (skipping_) {
          ++pos_;  // text under #if 0 need not even be C
        } else {
          Lex(TokenContext::kCode);
        }
      }
    }
    return std::move(tokens_);
  }

 private:
  char Peek(std::size_t ahead) const {
    return pos_ + ahead < source_.size() ? source_[pos_ + ahead] : '\0';
  }

  Location Where(std::size_t offset) const {
    auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    std::size_t line = static_cast<std::size_t>(after - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  void SkipComment() {
    std::size_t start = pos_;
    if (Peek(1) == '/') {
      // A line comment ends at a newline that no backslash splices.
      while (pos_ < source_.size() && !(source_[pos_] == '\n' && source_[pos_ - 1] != '\\')) {
        ++pos_;
      }
      return;
    }
    std::size_t close = source_.find("*/", pos_ + 2);
    if (close == std::string_view::npos) {
      throw SourceError(Where(start), "unterminated comment: '/*' has no closing '*/'");
    }
    pos_ = close + 2;
  }

  // A directive runs to the first newline no backslash splices. Only #define matters: its body
  // may use a shared variable. Others (#include <a'b.h>, #error don't) are skipped unread.
  void Directive() {
    ++pos_;  // '#'
    while (pos_ < source_.size() && (source_[pos_] == ' ' || source_[pos_] == '\t')) ++pos_;
    std::size_t name_start = pos_;
    while (pos_ < source_.size() && IsIdentifierChar(source_[pos_])) ++pos_;
    std::string_view name = source_.substr(name_start, pos_ - name_start);
    TrackDisabledText(name);
    bool define = name == "define" && !skipping_;
    std::size_t first_token = tokens_.size();
    while (pos_ < source_.size()) {
      char c = source_[pos_];
      if (c == '\n') return;
      if (c == '\\' && Peek(1) == '\n') {
        pos_ += 2;
      } else if (c == '/' && (Peek(1) == '*' || Peek(1) == '/')) {
        SkipComment();
      } else if (std::isspace(static_cast<unsigned char>(c)) || !define) {
        ++pos_;
      } else {
        Lex(TokenContext::kDefine);
        if (tokens_.size() == first_token + 1) tokens_.back().defined_name = true;
      }
    }
  }

  // Text under `#if 0` (up to its #else, #elif or #endif) is what programmers comment out with;
  // lmdxpp reads none of it.
  void TrackDisabledText(std::string_view directive) {
    if (!skipping_) {
      if (directive == "if" && RestOfLineIs("0")) skipping_ = true;
      return;
    }
    if (directive == "if" || directive == "ifdef" || directive == "ifndef") {
      ++nested_;
    } else if (directive == "endif") {
      if (nested_ == 0) skipping_ = false;
      if (nested_ > 0) --nested_;
    } else if (nested_ == 0 && (directive == "else" || directive.substr(0, 4) == "elif")) {
      skipping_ = false;
    }
  }

  bool RestOfLineIs(std::string_view word) const {
    std::size_t end = source_.find('\n', pos_);
    std::string_view rest = source_.substr(pos_, end == std::string_view::npos ? end : end - pos_);
    std::size_t comment = rest.find('/');
    if (comment != std::string_view::npos) rest = rest.substr(0, comment);
    std::size_t first = rest.find_first_not_of(" \t");
    std::size_t last = rest.find_last_not_of(" \t\r");
    return first != std::string_view::npos && rest.substr(first, last - first + 1) == word;
  }

  void Lex(TokenContext context) {
    std::size_t start = pos_;
    char c = source_[pos_];
    TokenKind kind = TokenKind::kPunctuator;
    if (IsIdentifierStart(c)) {
      while (pos_ < source_.size() && IsIdentifierChar(source_[pos_])) ++pos_;
      std::string_view word = source_.substr(start, pos_ - start);
      kind = TokenKind::kIdentifier;
      if ((Peek(0) == '"' || Peek(0) == '\'') && IsLiteralPrefix(word)) {
        kind = Literal(start, word.back() == 'R');
      }
    } else if (IsDigit(c) || (c == '.' && IsDigit(Peek(1)))) {
      Number();
      kind = TokenKind::kNumber;
    } else if (c == '"' || c == '\'') {
      kind = Literal(start, false);
    } else {
      pos_ += PunctuatorLength();
    }
    tokens_.push_back(
        {kind, context, start, pos_, Where(start), source_.substr(start, pos_ - start)});
  }

  // A pp-number: digits, letters, dots, exponent signs and C++14/C23 digit separators.
  void Number() {
    while (pos_ < source_.size()) {
      char c = source_[pos_];
      bool exponent_sign =
          (c == '+' || c == '-') && pos_ > 0 &&
          std::string_view("eEpP").find(source_[pos_ - 1]) != std::string_view::npos;
      if (c == '\'' && IsIdentifierChar(Peek(1))) {
        pos_ += 2;
      } else if (exponent_sign || IsIdentifierChar(c) || c == '.') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  TokenKind Literal(std::size_t token_start, bool raw) {
    char quote = source_[pos_];
    if (raw && quote == '"') {
      RawString(token_start);
      return TokenKind::kString;
    }
    ++pos_;
    while (pos_ < source_.size() && source_[pos_] != quote) {
      if (source_[pos_] == '\\') {
        ++pos_;  // the escaped character, a newline included (a splice)
      } else if (source_[pos_] == '\n') {
        break;
      }
      ++pos_;
    }
    if (pos_ >= source_.size() || source_[pos_] != quote) {
      throw SourceError(Where(token_start), quote == '"' ? "missing terminating '\"' character"
                                                         : "missing terminating ' character");
    }
    ++pos_;
    return quote == '"' ? TokenKind::kString : TokenKind::kCharacter;
  }

  // R"delimiter( ... )delimiter"
  void RawString(std::size_t token_start) {
    std::size_t open = source_.find('(', pos_);
    if (open == std::string_view::npos) {
      throw SourceError(Where(token_start), "raw string literal without '('");
    }
    std::string close = ")" + std::string(source_.substr(pos_ + 1, open - pos_ - 1)) + "\"";
    std::size_t end = source_.find(close, open + 1);
    if (end == std::string_view::npos) {
      throw SourceError(Where(token_start), "unterminated raw string literal");
    }
    pos_ = end + close.size();
  }

  std::size_t PunctuatorLength() const {
    for (std::string_view p : kLongPunctuators) {
      if (source_.substr(pos_, p.size()) == p) return p.size();
    }
    return 1;
  }

  std::string_view source_;
  std::size_t pos_ = 0;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> tokens_;
  bool skipping_ = false;  // inside #if 0
  int nested_ = 0;         // conditionals opened inside the #if 0
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source) { return Lexer(source).Run(); }

}  // namespace lmdx::pp
