// The DRF fuzzer's oracle: outside the DSM, a file that every node of the job maps (MAP_SHARED),
// holding an image of the shared variables and, per byte, which operation wrote it last. Every
// write to shared memory is written here too, at the same point of the program; in a data-race-free
// program every write a read may see is ordered with it, so at each read the image holds the last
// write before it in happens-before.
#ifndef LMDX_TESTS_CONSISTENCY_DRF_ORACLE_H_
#define LMDX_TESTS_CONSISTENCY_DRF_ORACLE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace lmdx::drf {

// Who wrote a byte: program, round, thread and step (0 for the initial zero).
struct WriteTag {
  std::uint32_t program = 0;
  std::uint32_t round = 0;
  std::uint32_t thread = 0;
  std::uint32_t step = 0;
  bool written = false;
};

class Oracle {
 public:
  // The file's size for `bytes` bytes of shared variables.
  static std::size_t FileBytes(std::size_t bytes);
  // Creates (or empties) the file; throws std::runtime_error naming the path and the reason.
  static void Create(const std::string& path, std::size_t bytes);

  // Maps a file made by Create for the same number of bytes.
  Oracle(const std::string& path, std::size_t bytes);
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  void Write(std::size_t at, const void* data, std::size_t length, const WriteTag& tag);
  void Read(std::size_t at, void* into, std::size_t length) const;
  WriteTag TagOf(std::size_t at) const;

 private:
  std::size_t bytes_;
  void* mapping_ = nullptr;
  std::uint8_t* image_ = nullptr;
  std::uint64_t* tags_ = nullptr;
};

}  // namespace lmdx::drf

#endif  // LMDX_TESTS_CONSISTENCY_DRF_ORACLE_H_
