#include "tests/consistency/drf/oracle.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace lmdx::drf {
namespace {

constexpr std::uint64_t kMagic = 0x4c4d4458'4f52434cull;  // "LMDXORCL"
constexpr std::size_t kHeader = 64;

std::runtime_error Failure(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

// Packs a tag into one word, so that a reader never sees half of another's.
std::uint64_t Pack(const WriteTag& tag) {
  return (static_cast<std::uint64_t>(tag.program & 0xFFFFF) << 44) |
         (static_cast<std::uint64_t>(tag.round & 0xF) << 40) |
         (static_cast<std::uint64_t>(tag.thread & 0xFF) << 32) | (tag.step + 1ull);
}

}  // namespace

std::size_t Oracle::FileBytes(std::size_t bytes) { return kHeader + bytes + 8 * bytes; }

void Oracle::Create(const std::string& path, std::size_t bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw Failure("cannot create the oracle file", path);
  const bool sized = ::ftruncate(fd, static_cast<off_t>(FileBytes(bytes))) == 0;
  const std::uint64_t header[2] = {kMagic, bytes};
  const bool headed = sized && ::pwrite(fd, header, sizeof header, 0) == sizeof header;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (!headed) throw Failure("cannot size the oracle file", path);
}

Oracle::Oracle(const std::string& path, std::size_t bytes) : bytes_(bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw Failure("cannot open the oracle file", path);
  mapping_ = ::mmap(nullptr, FileBytes(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw Failure("cannot map the oracle file", path);
  }
  const auto* header = static_cast<const std::uint64_t*>(mapping_);
  if (header[0] != kMagic || header[1] != bytes) {
    ::munmap(mapping_, FileBytes(bytes));
    throw std::runtime_error("the oracle file " + path + " was not made for " +
                             std::to_string(bytes) + " bytes of shared variables");
  }
  image_ = static_cast<std::uint8_t*>(mapping_) + kHeader;
  tags_ = reinterpret_cast<std::uint64_t*>(image_ + bytes);
}

Oracle::~Oracle() {
  if (mapping_ != nullptr) ::munmap(mapping_, FileBytes(bytes_));
}

void Oracle::Write(std::size_t at, const void* data, std::size_t length, const WriteTag& tag) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  const std::uint64_t packed = Pack(tag);
  for (std::size_t i = 0; i < length; ++i) {
    std::atomic_ref<std::uint8_t>(image_[at + i]).store(bytes[i], std::memory_order_relaxed);
    std::atomic_ref<std::uint64_t>(tags_[at + i]).store(packed, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
}

void Oracle::Read(std::size_t at, void* into, std::size_t length) const {
  std::atomic_thread_fence(std::memory_order_acquire);
  auto* bytes = static_cast<std::uint8_t*>(into);
  for (std::size_t i = 0; i < length; ++i) {
    bytes[i] = std::atomic_ref<std::uint8_t>(image_[at + i]).load(std::memory_order_relaxed);
  }
}

WriteTag Oracle::TagOf(std::size_t at) const {
  const std::uint64_t packed =
      std::atomic_ref<std::uint64_t>(tags_[at]).load(std::memory_order_relaxed);
  if (packed == 0) return {};
  return {static_cast<std::uint32_t>(packed >> 44),
          static_cast<std::uint32_t>((packed >> 40) & 0xF),
          static_cast<std::uint32_t>((packed >> 32) & 0xFF),
          static_cast<std::uint32_t>((packed & 0xFFFFFFFF) - 1), true};
}

}  // namespace lmdx::drf
