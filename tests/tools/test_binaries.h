#ifndef LMDX_TESTS_TOOLS_TEST_BINARIES_H_
#define LMDX_TESTS_TOOLS_TEST_BINARIES_H_

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace lmdx::tools::testing {

// The path of a binary the BUILD file hands to the test in an environment variable as
// $(rootpath ...): relative to the runfiles folder, the test's working directory. Made absolute
// because the launcher is started from there but nodes may change directory.
inline std::string TestBinary(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') {
    throw std::runtime_error(std::string(variable) + " is not set; run the test with bazel test");
  }
  return std::filesystem::absolute(value).string();
}

}  // namespace lmdx::tools::testing

#endif  // LMDX_TESTS_TOOLS_TEST_BINARIES_H_
