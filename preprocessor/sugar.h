#ifndef LMDX_PREPROCESSOR_SUGAR_H_
#define LMDX_PREPROCESSOR_SUGAR_H_

#include <string>
#include <string_view>

namespace lmdx::pp {

// The LMDX_* calls lmdxpp rewrites into calls of the C API.
struct Sugar {
  enum class Kind {
    kNamed,     // the first argument is an object's name: LMDX_barrier(a) -> lmdx_barrier("a")
    kStart,     // a thread function and an optional argument
    kStartOn,   // a node, a thread function and an optional argument
    kThreadId,  // a thread id, or the name of an LMDX_thread (its oldest unjoined thread)
    kExit,      // an optional result
  };
  std::string_view macro;
  std::string_view function;
  Kind kind;
  int min_arguments;
  int max_arguments;
  std::string_view usage;  // how it is written, for messages
};

// The rewriting rule for an identifier, or nullptr when it is not one of the calls.
const Sugar* FindSugar(std::string_view identifier);

// LMDX_* words lmdxpp knows: its own constructs, the calls above and the header's macros.
bool IsKnownConstruct(std::string_view identifier);

// The known construct closest in spelling to a misspelt one ("" when none is close).
std::string ClosestConstruct(std::string_view identifier);

}  // namespace lmdx::pp

#endif  // LMDX_PREPROCESSOR_SUGAR_H_
