#ifndef LMDX_PREPROCESSOR_TRANSLATOR_H_
#define LMDX_PREPROCESSOR_TRANSLATOR_H_

#include <string>
#include <string_view>
#include <vector>

#include "preprocessor/diagnostic.h"

namespace lmdx::pp {

// The name lmdxpp gives the program's own `main`, so that the `main` it generates starts LMDX
// first; `lmdx cc` maps it back in compiler messages.
inline constexpr char kRenamedMain[] = "lmdx_program_main";

// Turns an LMDX-annotated C or C++ source into plain C or C++ over the API of <lmdx/lmdx.h>
// (docs/preprocessor.md lists every construct):
//   LMDX_shared T name[dims];   a named shared variable; later uses of name reach shared memory
//   LMDX_thread f(void *arg)    a thread function, void *f(void *arg), NULL when it falls off
//   LMDX_start_thread(f[, a]), LMDX_join_thread(f or id), LMDX_barrier(b), LMDX_sema_P(s), ...
//   main                        runs after lmdx_init (threads style), unless it calls it itself
// The output keeps the input's lines where they were and starts with a #line naming file_name, so
// the compiler's messages point at the user's lines. Throws SourceError for malformed constructs.
// Notes on what lmdxpp inserted go to notes when given.
std::string Translate(std::string_view source, const std::string& file_name,
                      std::vector<SourceNote>* notes = nullptr);

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_TRANSLATOR_H_
