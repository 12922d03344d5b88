// Configuration files are the user's text: any of it must end in settings or in lmdx::Error with
// a message, never a crash.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    lmdx::config::Settings settings = lmdx::config::SettingsFromText(text, "fuzz.conf", {});
    static_cast<void>(settings);
  } catch (const lmdx::Error& error) {
    if (std::string_view(error.what()).empty()) std::abort();
  }
  return 0;
}
