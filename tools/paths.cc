#include "tools/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace lmdx::tools {

namespace fs = std::filesystem;

Paths Paths::FromEnvironment() {
  const char* home = std::getenv("LMDX_HOME");
  if (home != nullptr && *home != '\0') return Paths(home, fs::path(home) / "bazel-bin");
  fs::path above = SelfPath().parent_path().parent_path();
  std::error_code ec;
  if (fs::exists(above / "include" / "lmdx" / "lmdx.h", ec) &&
      fs::exists(above / "lib" / "liblmdx.so", ec)) {
    return Paths({}, {}, above);
  }
  return Paths({}, above);
}

fs::path SelfPath() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("lmdx") : self;
}

bool IsExecutableFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace lmdx::tools
