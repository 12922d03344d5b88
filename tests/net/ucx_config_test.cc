#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "net/fabric/internal/ucx_worker.h"

namespace lmdx::net::internal {
namespace {

// Sets UCX_TLS (or unsets it) for one check, and restores what was there.
class UcxTls {
 public:
  explicit UcxTls(std::optional<std::string> value) {
    if (const char* old = ::getenv("UCX_TLS")) old_ = old;
    if (value) {
      ::setenv("UCX_TLS", value->c_str(), 1);
    } else {
      ::unsetenv("UCX_TLS");
    }
  }
  ~UcxTls() {
    if (old_) {
      ::setenv("UCX_TLS", old_->c_str(), 1);
    } else {
      ::unsetenv("UCX_TLS");
    }
  }

 private:
  std::optional<std::string> old_;
};

// What check() answers with UCX_TLS set to tls (or unset).
template <bool (*check)()>
bool With(std::optional<std::string> tls) {
  UcxTls set(std::move(tls));
  return check();
}
constexpr auto MayUseSharedMemory = With<UcxMayUseSharedMemory>;

TEST(UcxConfigTest, SharedMemoryIsAllowedUnlessUcxTlsLeavesItOut) {
  EXPECT_TRUE(MayUseSharedMemory(std::nullopt));
  EXPECT_TRUE(MayUseSharedMemory(""));
  EXPECT_TRUE(MayUseSharedMemory("all"));
  EXPECT_TRUE(MayUseSharedMemory("sm"));
  EXPECT_TRUE(MayUseSharedMemory("tcp,sm"));
  EXPECT_TRUE(MayUseSharedMemory("rc,posix,cma"));
  EXPECT_TRUE(MayUseSharedMemory("^tcp"));
  EXPECT_FALSE(MayUseSharedMemory("tcp"));
  EXPECT_FALSE(MayUseSharedMemory("rc,ud,tcp"));
  EXPECT_FALSE(MayUseSharedMemory("^sm"));
  EXPECT_FALSE(MayUseSharedMemory("^tcp,shm"));
  EXPECT_FALSE(MayUseSharedMemory("smx"));  // a name is matched whole
}

}  // namespace
}  // namespace lmdx::net::internal
