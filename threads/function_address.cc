#include "threads/function_address.h"

#include <link.h>

#include <cstdio>

#include "base/error.h"

namespace lmdx::threads {
namespace {

std::string Hex(const void* address) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", address);
  return text;
}

// The loader's list names the main program "" and every library by the path it was loaded from;
// both are the same on every node of a job, which runs one executable.
struct Containing {
  std::uintptr_t address;
  std::string object;
  std::uintptr_t base = 0;
  bool found = false;
};

struct Named {
  const std::string* object;
  std::uintptr_t base = 0;
  bool found = false;
};

}  // namespace

PortableFunction Describe(const void* function) {
  Containing search{reinterpret_cast<std::uintptr_t>(function), {}};
  if (function != nullptr) {
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
          auto& wanted = *static_cast<Containing*>(data);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& segment = info->dlpi_phdr[i];
            if (segment.p_type != PT_LOAD) continue;
            std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
            if (wanted.address >= start && wanted.address < start + segment.p_memsz) {
              wanted.object = info->dlpi_name != nullptr ? info->dlpi_name : "";
              wanted.base = info->dlpi_addr;
              wanted.found = true;
              return 1;
            }
          }
          return 0;
        },
        &search);
  }
  if (!search.found) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                Hex(function) + " is not a function of this program or its libraries");
  }
  return PortableFunction{search.object, search.address - search.base};
}

void* Locate(const PortableFunction& function) {
  Named search{&function.object};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& wanted = *static_cast<Named*>(data);
        if (*wanted.object == (info->dlpi_name != nullptr ? info->dlpi_name : "")) {
          wanted.base = info->dlpi_addr;
          wanted.found = true;
          return 1;
        }
        return 0;
      },
      &search);
  if (!search.found) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT,
                "the function's file " + function.object + " is not loaded in this process");
  }
  return reinterpret_cast<void*>(search.base + function.offset);
}

}  // namespace lmdx::threads
