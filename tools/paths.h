#ifndef LMDX_TOOLS_PATHS_H_
#define LMDX_TOOLS_PATHS_H_

#include <filesystem>
#include <string>
#include <vector>

namespace lmdx::tools {

// Where things are: the repository (LMDX_HOME, set by the ./lmdx script) and Bazel's output
// tree (LMDX_HOME/bazel-bin); or, for a tool that `lmdx install` put in PREFIX/bin, the prefix
// with its include/ and lib/.
class Paths {
 public:
  // LMDX_HOME from the environment; else an installed prefix when this binary is PREFIX/bin/lmdx
  // beside PREFIX/include/lmdx/lmdx.h; else only bazel-bin is found, as the tree two levels
  // above this binary (bazel-bin/tools/lmdx).
  static Paths FromEnvironment();
  Paths(std::filesystem::path home, std::filesystem::path bin,
        std::filesystem::path installed_prefix = {})
      : home_(std::move(home)), bin_(std::move(bin)), prefix_(std::move(installed_prefix)) {}
  // Empty when LMDX_HOME is not set.
  const std::filesystem::path& home() const { return home_; }
  const std::filesystem::path& bin() const { return bin_; }
  // Empty unless the tool runs from an installation.
  const std::filesystem::path& installed_prefix() const { return prefix_; }

 private:
  std::filesystem::path home_;
  std::filesystem::path bin_;
  std::filesystem::path prefix_;
};

// The absolute path of the running executable.
std::filesystem::path SelfPath();

// True when path names a regular file this process may execute.
bool IsExecutableFile(const std::filesystem::path& path);

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_PATHS_H_
