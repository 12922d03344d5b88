// lmdxpp reads the user's sources: any text must translate or end in a SourceError with a
// message, never a crash or a hang.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "preprocessor/translator.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    static_cast<void>(lmdx::pp::Translate(source, "fuzz.c"));
  } catch (const lmdx::pp::SourceError& error) {
    if (std::string_view(error.what()).empty()) std::abort();
  }
  return 0;
}
