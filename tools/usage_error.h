#ifndef LMDX_TOOLS_USAGE_ERROR_H_
#define LMDX_TOOLS_USAGE_ERROR_H_

#include <stdexcept>

namespace lmdx::tools {

// A mistake in what the user asked for (a bad option, a missing program). main() prints its text
// after "lmdx SUBCOMMAND: " and exits with status 2, apart from failures of the job itself.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_USAGE_ERROR_H_
