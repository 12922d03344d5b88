// Non-blocking raw messages between every pair of ranks (SPMD): receives posted before their
// messages and after them, sends completed by lmdx_test loops and by lmdx_wait_request, a
// non-blocking send followed by a blocking one on the same tag (order kept), shared buffers on
// both sides, a receive too small for its message (the message stays for a larger one), a NULL
// request, and the C++ wrappers. Each rank prints "rank R verified N messages".
#include <lmdx/lmdx.h>

#include <lmdx/lmdx.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int rank_ = 0;
int size_ = 0;
int verified_ = 0;

[[noreturn]] void Fail(const std::string& what) {
  std::string text = "rank " + std::to_string(rank_) + ": " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Check(bool ok, const std::string& what) {
  if (!ok) Fail(what);
}

std::uint8_t Byte(int source, int dest, int tag, std::size_t i) {
  return static_cast<std::uint8_t>(source * 131 + dest * 31 + tag * 7 + i * 13 + (i >> 12));
}

std::vector<std::uint8_t> Message(int source, int dest, int tag, std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = Byte(source, dest, tag, i);
  return bytes;
}

void Verify(const std::uint8_t* got, std::size_t length, int source, int tag, std::size_t size,
            const lmdx_status& status) {
  Check(status.source == source && status.tag == tag && status.length == size,
        "status of tag " + std::to_string(tag) + " from " + std::to_string(source));
  Check(length >= size, "buffer");
  for (std::size_t i = 0; i < size; ++i) {
    if (got[i] != Byte(source, rank_, tag, i)) {
      Fail("byte " + std::to_string(i) + " of tag " + std::to_string(tag) + " from rank " +
           std::to_string(source));
    }
  }
  ++verified_;
}

// Every peer, three sizes, receives posted first; half the sends are completed by tests.
void AllPairs() {
  const std::size_t sizes[] = {0, 4096, std::size_t{1} << 20};
  std::vector<std::vector<std::uint8_t>> in;
  std::vector<lmdx_request_t> receives;
  std::vector<std::pair<int, int>> expected;  // source, tag
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    for (int k = 0; k < 3; ++k) {
      in.emplace_back(sizes[k] + 16);
      receives.push_back(nullptr);
      Check(lmdx_irecv(peer, k, in.back().data(), in.back().size(), &receives.back()) == LMDX_OK,
            "lmdx_irecv");
      expected.emplace_back(peer, k);
    }
  }
  lmdx_barrier_all();  // every receive is posted before any message leaves
  std::vector<std::vector<std::uint8_t>> out;
  std::vector<lmdx_request_t> sends;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    for (int k = 0; k < 3; ++k) {
      out.push_back(Message(rank_, peer, k, sizes[k]));
      sends.push_back(nullptr);
      Check(lmdx_isend(peer, k, out.back().data(), out.back().size(), LMDX_NET_ANY,
                       &sends.back()) == LMDX_OK,
            "lmdx_isend");
    }
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    lmdx_status status;
    if (i % 2 == 0) {
      int done = 0;
      while (!done) Check(lmdx_test(&sends[i], &done, &status) == LMDX_OK, "lmdx_test");
    } else {
      Check(lmdx_wait_request(&sends[i], &status) == LMDX_OK, "lmdx_wait_request (send)");
    }
    Check(sends[i] == nullptr, "a completed send request is not NULL");
  }
  for (std::size_t i = 0; i < receives.size(); ++i) {
    lmdx_status status;
    Check(lmdx_wait_request(&receives[i], &status) == LMDX_OK, "lmdx_wait_request (receive)");
    auto [source, tag] = expected[i];
    Verify(in[i].data(), in[i].size(), source, tag, sizes[tag], status);
  }
}

// Messages that arrive before their receives are posted; a non-blocking send and then a blocking
// one on one tag reach the receiver in that order.
void LateReceivesAndOrder() {
  int right = (rank_ + 1) % size_;
  int left = (rank_ + size_ - 1) % size_;
  auto first = Message(rank_, right, 10, 5000);
  lmdx_request_t send = nullptr;
  Check(lmdx_isend(right, 10, first.data(), first.size(), LMDX_NET_ANY, &send) == LMDX_OK, "isend");
  // Tag 10 again with other bytes: the receiver must take the earlier one first.
  auto again = Message(rank_, right, 11, 300);
  Check(lmdx_send_tagged(right, 10, again.data(), again.size(), LMDX_NET_ANY) == LMDX_OK, "send");
  Check(lmdx_wait_request(&send, nullptr) == LMDX_OK, "wait");
  lmdx_barrier_all();  // both messages are here before the receives
  std::vector<std::uint8_t> a(5000), b(300);
  lmdx_request_t ra = nullptr, rb = nullptr;
  Check(lmdx_irecv(left, 10, a.data(), a.size(), &ra) == LMDX_OK, "irecv a");
  Check(lmdx_irecv(left, 10, b.data(), b.size(), &rb) == LMDX_OK, "irecv b");
  lmdx_status sa, sb;
  Check(lmdx_wait_request(&rb, &sb) == LMDX_OK && lmdx_wait_request(&ra, &sa) == LMDX_OK, "wait");
  Verify(a.data(), a.size(), left, 10, 5000, sa);
  for (std::size_t i = 0; i < 300; ++i) {
    Check(b[i] == Byte(left, rank_, 11, i), "the second message's byte " + std::to_string(i));
  }
  Check(sb.length == 300 && sb.source == left, "the second message's status");
  ++verified_;
}

// Shared buffers on both sides: the sender's bytes are read through the protocol, the
// receiver's written through it.
void SharedBuffers() {
  constexpr std::size_t kBytes = 3 * 4096 + 100;
  auto* area = static_cast<std::uint8_t*>(lmdx_alloc_collective(kBytes * 2 * size_));
  std::uint8_t* mine = area + kBytes * 2 * rank_;
  auto bytes = Message(rank_, (rank_ + 1) % size_, 20, kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) mine[i] = bytes[i];
  lmdx_barrier_all();
  int right = (rank_ + 1) % size_;
  int left = (rank_ + size_ - 1) % size_;
  lmdx_request_t receive = nullptr, send = nullptr;
  Check(lmdx_irecv(left, 20, mine + kBytes, kBytes, &receive) == LMDX_OK, "irecv shared");
  Check(lmdx_isend(right, 20, mine, kBytes, LMDX_NET_ANY, &send) == LMDX_OK, "isend shared");
  lmdx_status status;
  Check(lmdx_wait_request(&send, nullptr) == LMDX_OK, "wait send");
  Check(lmdx_wait_request(&receive, &status) == LMDX_OK, "wait receive");
  Verify(mine + kBytes, kBytes, left, 20, kBytes, status);
  lmdx_barrier_all();
}

// A receive too small for its message fails with LMDX_ERR_TRUNCATED and loses nothing; a NULL
// request completes at once.
void TooSmallAndNull() {
  int right = (rank_ + 1) % size_;
  int left = (rank_ + size_ - 1) % size_;
  auto bytes = Message(rank_, right, 30, 2000);
  Check(lmdx_send_tagged(right, 30, bytes.data(), bytes.size(), LMDX_NET_ANY) == LMDX_OK, "send");
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  std::vector<std::uint8_t> small(100), big(2000);
  lmdx_request_t request = nullptr;
  Check(lmdx_irecv(left, 30, small.data(), small.size(), &request) == LMDX_OK, "irecv small");
  int code = lmdx_wait_request(&request, nullptr);
  Check(code == LMDX_ERR_TRUNCATED, "a receive too small returned " + std::to_string(code));
  lmdx_status status;
  Check(lmdx_recv_tagged(left, 30, big.data(), big.size(), &status) == LMDX_OK, "recv the rest");
  Verify(big.data(), big.size(), left, 30, 2000, status);
  lmdx_request_t none = nullptr;
  int done = 0;
  Check(lmdx_wait_request(&none, nullptr) == LMDX_OK, "wait on NULL");
  Check(lmdx_test(&none, &done, nullptr) == LMDX_OK && done == 1, "test on NULL");
  Check(lmdx_isend(size_, 0, bytes.data(), 1, LMDX_NET_ANY, &request) == LMDX_ERR_INVALID_ARGUMENT,
        "an isend to no rank");
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
}

void Cxx() {
  int right = (rank_ + 1) % size_;
  int left = (rank_ + size_ - 1) % size_;
  auto bytes = Message(rank_, right, 40, 70000);
  std::vector<std::uint8_t> in(70000);
  lmdx::request receive = lmdx::irecv(left, 40, std::as_writable_bytes(std::span(in)));
  {
    lmdx::request send = lmdx::isend(right, 40, std::as_bytes(std::span(bytes)));
  }  // the destructor waited
  lmdx::status got{};
  for (;;) {
    if (auto done = receive.test()) {
      got = *done;
      break;
    }
  }
  Check(!receive.pending(), "a tested request is still pending");
  lmdx_status status{got.source, got.length, got.tag};
  Verify(in.data(), in.size(), left, 40, 70000, status);
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  rank_ = lmdx_rank();
  size_ = lmdx_size();
  AllPairs();
  lmdx_barrier_all();
  LateReceivesAndOrder();
  lmdx_barrier_all();
  SharedBuffers();
  TooSmallAndNull();
  lmdx_barrier_all();
  Cxx();
  lmdx_barrier_all();
  std::printf("rank %d verified %d messages\n", rank_, verified_);
  lmdx_finalize();
  return 0;
}
