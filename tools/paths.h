#ifndef LMDX_TOOLS_PATHS_H_
#define LMDX_TOOLS_PATHS_H_

#include <filesystem>
#include <string>
#include <vector>

namespace lmdx::tools {

// Where things are: the repository (LMDX_HOME, set by the ./lmdx script) and Bazel's output
// tree (LMDX_HOME/bazel-bin).
class Paths {
 public:
  // LMDX_HOME from the environment; otherwise the repository is unknown and only bazel-bin is
  // found, as the tree two levels above this binary (bazel-bin/tools/lmdx).
  static Paths FromEnvironment();
  Paths(std::filesystem::path home, std::filesystem::path bin)
      : home_(std::move(home)), bin_(std::move(bin)) {}

  // Empty when LMDX_HOME is not set.
  const std::filesystem::path& home() const { return home_; }
  const std::filesystem::path& bin() const { return bin_; }

 private:
  std::filesystem::path home_;
  std::filesystem::path bin_;
};

// The absolute path of the running executable.
std::filesystem::path SelfPath();

// True when path names a regular file this process may execute.
bool IsExecutableFile(const std::filesystem::path& path);

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_PATHS_H_
