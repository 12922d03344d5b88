#include "threads/function_address.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "base/fd.h"
#include "base/hex.h"
#include "base/mapping.h"

namespace lmdx::threads {
namespace {

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
                AddressText(function) + " is not a function of this program or its libraries");
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

namespace {

std::string Demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> plain(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && plain ? std::string(plain.get()) : std::string(name);
}

// The name of the function symbol at value in an ELF image of bytes, "" when none.
std::string FindSymbol(const std::byte* image, std::size_t bytes, std::uint64_t value) {
  if (bytes < sizeof(ElfW(Ehdr))) return {};
  const auto* header = reinterpret_cast<const ElfW(Ehdr)*>(image);
  if (std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_shoff == 0 ||
      header->e_shentsize != sizeof(ElfW(Shdr)) ||
      header->e_shoff + std::uint64_t{header->e_shnum} * sizeof(ElfW(Shdr)) > bytes) {
    return {};
  }
  const auto* sections = reinterpret_cast<const ElfW(Shdr)*>(image + header->e_shoff);
  for (int i = 0; i < header->e_shnum; ++i) {
    const ElfW(Shdr)& table = sections[i];
    if (table.sh_type != SHT_SYMTAB && table.sh_type != SHT_DYNSYM) continue;
    if (table.sh_link >= header->e_shnum || table.sh_entsize != sizeof(ElfW(Sym)) ||
        table.sh_offset + table.sh_size > bytes) {
      continue;
    }
    const ElfW(Shdr)& names = sections[table.sh_link];
    if (names.sh_offset + names.sh_size > bytes) continue;
    const auto* symbols = reinterpret_cast<const ElfW(Sym)*>(image + table.sh_offset);
    const char* text = reinterpret_cast<const char*>(image + names.sh_offset);
    for (std::size_t k = 0; k < table.sh_size / sizeof(ElfW(Sym)); ++k) {
      const ElfW(Sym)& symbol = symbols[k];
      if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_value != value) continue;
      if (symbol.st_name >= names.sh_size) continue;
      return Demangled(text + symbol.st_name);
    }
  }
  return {};
}

}  // namespace

std::string SymbolName(const PortableFunction& function) {
  std::string path = function.object.empty() ? "/proc/self/exe" : function.object;
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat status {};
  if (!file || ::fstat(file.get(), &status) != 0 || status.st_size <= 0) return {};
  auto bytes = static_cast<std::size_t>(status.st_size);
  void* image = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, file.get(), 0);
  if (image == MAP_FAILED) return {};
  Mapping mapped(image, bytes);
  return FindSymbol(mapped.data(), bytes, function.offset);
}

}  // namespace lmdx::threads
