#include "net/internal/socket.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <string>

#include "gtest/gtest.h"

namespace lmdx::net::internal {
namespace {

sockaddr_in Address(const char* dotted) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  ::inet_pton(AF_INET, dotted, &address.sin_addr);
  return address;
}

int SendBufferOf(int fd) {
  int bytes = 0;
  socklen_t length = sizeof bytes;
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &length), 0);
  return bytes;
}

TEST(SameKernelTest, LoopbackAndOwnAddressAreLocal) {
  EXPECT_TRUE(SameKernel(Address("127.0.0.1"), Address("127.0.0.1")));
  EXPECT_TRUE(SameKernel(Address("127.0.0.1"), Address("127.1.2.3")));
  EXPECT_TRUE(SameKernel(Address("10.0.0.5"), Address("10.0.0.5")));
}

TEST(SameKernelTest, AnotherHostsAddressIsNot) {
  EXPECT_FALSE(SameKernel(Address("10.0.0.5"), Address("10.0.0.6")));
  EXPECT_FALSE(SameKernel(Address("192.168.1.1"), Address("128.0.0.1")));
}

TEST(IsLoopbackHostTest, NamesAndAddressesOfThisHostOnly) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("10.1.2.3"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost(""));  // no host at all: nothing to resolve
}

// Both ends of a real loopback connection get the small send buffer (Linux reports twice what
// was asked, for its own bookkeeping); an unconnected socket keeps the kernel's default.
TEST(KeepLocalTrafficInCacheTest, LimitsBothEndsOfALoopbackConnection) {
  Fd listener = ListenTcp("127.0.0.1");
  const sockaddr_in listening = LocalAddress(listener.get());
  Fd outgoing = ConnectTcpBlocking(listening, 5000);
  sockaddr_in remote{};
  socklen_t length = sizeof remote;
  Fd accepted(::accept4(listener.get(), reinterpret_cast<sockaddr*>(&remote), &length, 0));
  ASSERT_TRUE(accepted);
  KeepLocalTrafficInCache(accepted.get(), remote);

  EXPECT_EQ(SendBufferOf(outgoing.get()), 2 * kLocalSendBufferBytes);
  EXPECT_EQ(SendBufferOf(accepted.get()), 2 * kLocalSendBufferBytes);

  Fd untouched(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(untouched);
  EXPECT_NE(SendBufferOf(untouched.get()), 2 * kLocalSendBufferBytes);
}

}  // namespace
}  // namespace lmdx::net::internal
