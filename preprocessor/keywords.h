#ifndef LMDX_PREPROCESSOR_KEYWORDS_H_
#define LMDX_PREPROCESSOR_KEYWORDS_H_

#include <string_view>

namespace lmdx::pp {

// Words that name a built-in type or qualify one: a shared name right after one is being
// declared again.
bool IsTypeKeyword(std::string_view word);

// Keywords after which an expression follows (return grid[0]): a shared name after one is a use.
bool IsExpressionKeyword(std::string_view word);

// Storage classes, which mean nothing for a variable of the whole job.
bool IsStorageClass(std::string_view word);

// Any C or C++ keyword: never a variable's or a thread's name.
bool IsKeyword(std::string_view word);

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_KEYWORDS_H_
