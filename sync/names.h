// Where a named object lives: its manager node is a stable hash of its name modulo the job size,
// so every node finds the same manager without asking anyone, and managers spread over the nodes.
#ifndef LMDX_SYNC_NAMES_H_
#define LMDX_SYNC_NAMES_H_

#include <cstdint>
#include <string_view>

namespace lmdx::sync {

// FNV-1a, 64 bits: stable across processes, builds and machines (std::hash is not).
constexpr std::uint64_t HashName(std::string_view name) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

constexpr int ManagerOf(std::string_view name, int size) {
  return static_cast<int>(HashName(name) % static_cast<std::uint64_t>(size));
}

}  // namespace lmdx::sync

#endif  // LMDX_SYNC_NAMES_H_
