#include "consistency/home_based/internal/open_pause.h"

#include <cstdlib>

#include "base/error.h"

namespace lmdx::consistency::internal {

std::chrono::milliseconds ParseOpenPause(const std::string& text) {
  if (text.empty()) return std::chrono::milliseconds(0);
  const std::string prefix = "open-pause=";
  char* end = nullptr;
  const long long value =
      text.rfind(prefix, 0) == 0 ? std::strtoll(text.c_str() + prefix.size(), &end, 10) : -1;
  if (value < 0 || value > 60000 || end == nullptr || *end != '\0' ||
      end == text.c_str() + prefix.size()) {
    throw Error(
        LMDX_ERR_INVALID_ARGUMENT,
        "LMDX_DSM_FAULTS: \"" + text + "\" is not open-pause=MS (milliseconds from 0 to 60000)");
  }
  return std::chrono::milliseconds(value);
}

std::chrono::milliseconds OpenPauseFromEnvironment() {
  const char* text = std::getenv("LMDX_DSM_FAULTS");
  return ParseOpenPause(text != nullptr ? text : "");
}

}  // namespace lmdx::consistency::internal
