#include "preprocessor/keywords.h"

#include <algorithm>
#include <array>

namespace lmdx::pp {
namespace {

template <std::size_t N>
bool Contains(const std::array<std::string_view, N>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

constexpr std::array<std::string_view, 21> kTypeKeywords = {
    "void",     "char",     "short", "int",      "long",     "float",   "double",
    "signed",   "unsigned", "_Bool", "bool",     "_Complex", "wchar_t", "char8_t",
    "char16_t", "char32_t", "const", "volatile", "restrict", "auto",    "__int128"};

constexpr std::array<std::string_view, 20> kExpressionKeywords = {
    "return",   "sizeof",   "case",       "else",   "do",       "throw",        "co_return",
    "co_yield", "co_await", "new",        "delete", "typeid",   "alignof",      "_Alignof",
    "decltype", "typeof",   "__typeof__", "not",    "noexcept", "static_assert"};

constexpr std::array<std::string_view, 8> kStorageClasses = {
    "static",        "extern",   "register", "thread_local",
    "_Thread_local", "__thread", "typedef",  "constexpr"};

constexpr std::array<std::string_view, 30> kOtherKeywords = {
    "if",      "for",      "while",     "switch",  "break",    "continue", "goto",      "default",
    "struct",  "union",    "enum",      "class",   "typename", "template", "namespace", "using",
    "public",  "private",  "protected", "virtual", "operator", "this",     "inline",    "friend",
    "mutable", "explicit", "try",       "catch",   "true",     "false"};

}  // namespace

bool IsTypeKeyword(std::string_view word) { return Contains(kTypeKeywords, word); }

bool IsExpressionKeyword(std::string_view word) { return Contains(kExpressionKeywords, word); }

bool IsStorageClass(std::string_view word) { return Contains(kStorageClasses, word); }

bool IsKeyword(std::string_view word) {
  return IsTypeKeyword(word) || IsExpressionKeyword(word) || IsStorageClass(word) ||
         Contains(kOtherKeywords, word);
}

}  // namespace lmdx::pp
