// Tagged raw messages and network hints between real nodes. argv[1] picks the scenario; each
// prints what it verified, and any mismatch aborts the job with a line that says what differed.
//   tags:  (3 ranks) receives by tag out of the order of sending, LMDX_ANY_TAG, any source with a
//          tag, a receive posted before its message that only a message of its tag fills, and
//          bad tags and hints refused.
//   hints: (2 ranks) rank 0 sends 5 messages hinted tcp, 4 shm, 3 any, 2 udp and 1 fabric; rank 1
//          checks them and prints the frames each network delivered; rank 0 prints how many hints
//          fell back (this node's counter, read through the runtime).
//   order: (2 ranks) 300 messages whose hints cycle through tcp, shm, any and udp arrive in order.
#include <lmdx/lmdx.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/internal/runtime_state.h"

namespace {

[[noreturn]] void Mismatch(const std::string& what) {
  std::string text = "rank " + std::to_string(lmdx_rank()) + ": MISMATCH: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Expect(bool condition, const std::string& what) {
  if (!condition) Mismatch(what);
}

void Say(const std::string& text) {
  std::printf("rank %d %s\n", lmdx_rank(), text.c_str());
  std::fflush(stdout);
}

void SendText(int dest, int tag, const std::string& text, int hint = LMDX_NET_ANY) {
  Expect(lmdx_send_tagged(dest, tag, text.data(), text.size(), hint) == LMDX_OK, "send " + text);
}

// Receives from src with tag and checks text, source and tag.
void ExpectText(int src, int tag, const std::string& text, int want_source, int want_tag) {
  char buffer[64] = {};
  lmdx_status status{};
  Expect(lmdx_recv_tagged(src, tag, buffer, sizeof buffer, &status) == LMDX_OK, "receive");
  std::string got(buffer, status.length);
  Expect(got == text && status.source == want_source && status.tag == want_tag,
         "got \"" + got + "\" from rank " + std::to_string(status.source) + " tag " +
             std::to_string(status.tag) + " where \"" + text + "\" from rank " +
             std::to_string(want_source) + " tag " + std::to_string(want_tag) + " was due");
}

std::vector<std::uint8_t> Pattern(int tag, std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(tag * 29 + i * 7);
  return bytes;
}

void Tags() {
  int rank = lmdx_rank();
  constexpr std::size_t kBig = std::size_t{1} << 20;
  if (rank == 0) {
    SendText(1, 5, "a");
    SendText(1, 7, "b");
    SendText(1, 5, "c");
    SendText(1, 9, "d");
    Expect(lmdx_send(1, "e", 1) == LMDX_OK, "plain send");
  } else if (rank == 2) {
    SendText(1, 3, "z");
  }
  if (rank == 1) {
    ExpectText(0, 7, "b", 0, 7);                // overtakes tag 5
    ExpectText(0, 5, "a", 0, 5);                // the first tag 5 of rank 0
    ExpectText(LMDX_ANY_SOURCE, 3, "z", 2, 3);  // any source, one tag
    ExpectText(0, LMDX_ANY_TAG, "c", 0, 5);     // any tag: rank 0's next
    char buffer[8];
    lmdx_status status{};
    Expect(lmdx_try_recv_tagged(0, 42, buffer, sizeof buffer, &status) == 1, "tag 42 waiting");
    ExpectText(0, 9, "d", 0, 9);
    status = lmdx_status{};
    Expect(lmdx_recv(0, buffer, sizeof buffer, &status) == LMDX_OK && status.length == 1 &&
               buffer[0] == 'e' && status.tag == 0,
           "lmdx_recv takes the plain send, tag 0");
    lmdx_set_error_mode(LMDX_ERRORS_RETURN);
    Expect(lmdx_send_tagged(0, -2, "x", 1, LMDX_NET_ANY) == LMDX_ERR_INVALID_ARGUMENT,
           "a negative tag is refused");
    Expect(lmdx_send_tagged(0, 1, "x", 1, 9) == LMDX_ERR_INVALID_ARGUMENT, "hint 9 is refused");
    Expect(std::string(lmdx_last_error_message()).find("network hint 9") != std::string::npos,
           lmdx_last_error_message());
    Expect(lmdx_recv_tagged(0, -5, buffer, sizeof buffer, &status) == LMDX_ERR_INVALID_ARGUMENT,
           "receive tag -5 is refused");
    lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  }
  // A receive for tag 11, posted before rank 0 sends tag 10 and then tag 11 (1 MiB each): only
  // the tag 11 message may land in its buffer.
  lmdx_barrier_all();
  if (rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<std::uint8_t> ten = Pattern(10, kBig);
    std::vector<std::uint8_t> eleven = Pattern(11, kBig);
    Expect(lmdx_send_tagged(1, 10, ten.data(), ten.size(), LMDX_NET_ANY) == LMDX_OK, "send 10");
    Expect(lmdx_send_tagged(1, 11, eleven.data(), eleven.size(), LMDX_NET_ANY) == LMDX_OK,
           "send 11");
  } else if (rank == 1) {
    std::vector<std::uint8_t> buffer(kBig);
    lmdx_status status{};
    Expect(lmdx_recv_tagged(0, 11, buffer.data(), buffer.size(), &status) == LMDX_OK, "recv 11");
    Expect(status.tag == 11 && status.length == kBig && buffer == Pattern(11, kBig),
           "the tag 11 message");
    Expect(lmdx_recv_tagged(0, 10, buffer.data(), buffer.size(), &status) == LMDX_OK, "recv 10");
    Expect(status.tag == 10 && status.length == kBig && buffer == Pattern(10, kBig),
           "the tag 10 message");
    Say("tags verified");
  }
  lmdx_barrier_all();
}

struct Hinted {
  int hint;
  int count;
};
constexpr Hinted kHints[] = {{LMDX_NET_TCP, 5},
                             {LMDX_NET_SHM, 4},
                             {LMDX_NET_ANY, 3},
                             {LMDX_NET_UDP, 2},
                             {LMDX_NET_FABRIC, 1}};

void Hints() {
  int rank = lmdx_rank();
  // Sizes from empty to 1 MiB, so that both payload paths (placed and buffered) take each network.
  auto size_of = [](int n) -> std::size_t { return n % 3 == 0 ? 0 : n % 3 == 1 ? 100 : 1 << 20; };
  if (rank == 0) {
    int n = 0;
    for (const Hinted& hinted : kHints) {
      for (int i = 0; i < hinted.count; ++i, ++n) {
        std::vector<std::uint8_t> bytes = Pattern(n, size_of(n));
        Expect(lmdx_send_tagged(1, hinted.hint, bytes.data(), bytes.size(), hinted.hint) == LMDX_OK,
               "send " + std::to_string(n));
      }
    }
    Say("hint fallbacks " + std::to_string(lmdx::api::CurrentNode()->hint_fallbacks()));
  } else {
    std::vector<std::uint8_t> buffer(std::size_t{1} << 20);
    int n = 0;
    for (const Hinted& hinted : kHints) {
      for (int i = 0; i < hinted.count; ++i, ++n) {
        lmdx_status status{};
        Expect(lmdx_recv(0, buffer.data(), buffer.size(), &status) == LMDX_OK, "receive");
        std::size_t size = size_of(n);
        Expect(status.tag == hinted.hint && status.length == size &&
                   std::vector<std::uint8_t>(buffer.begin(), buffer.begin() + size) ==
                       Pattern(n, size),
               "message " + std::to_string(n));
      }
    }
    Say("hinted messages verified; " + lmdx::api::CurrentNode()->TrafficSummary());
  }
  lmdx_barrier_all();
}

void Order() {
  constexpr int kMessages = 300;
  const int hints[] = {LMDX_NET_TCP, LMDX_NET_SHM, LMDX_NET_ANY, LMDX_NET_UDP};
  if (lmdx_rank() == 0) {
    std::vector<std::uint8_t> big(256 << 10);
    for (int i = 0; i < kMessages; ++i) {
      // Every 50th message is large, so that it takes a while on its network.
      std::size_t size = i % 50 == 0 ? big.size() : sizeof i;
      std::memcpy(big.data(), &i, sizeof i);
      Expect(lmdx_send_tagged(1, i % 4, big.data(), size, hints[i % 4]) == LMDX_OK, "send");
    }
  } else {
    std::vector<std::uint8_t> buffer(256 << 10);
    for (int i = 0; i < kMessages; ++i) {
      lmdx_status status{};
      Expect(lmdx_recv(0, buffer.data(), buffer.size(), &status) == LMDX_OK, "receive");
      int got = -1;
      std::memcpy(&got, buffer.data(), sizeof got);
      Expect(got == i && status.tag == i % 4, "message " + std::to_string(got) + " (tag " +
                                                  std::to_string(status.tag) + ") came where " +
                                                  std::to_string(i) + " was due");
    }
    Say("order verified over " + std::to_string(kMessages) + " messages");
  }
  lmdx_barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "tags";
  if (mode == "tags") {
    Tags();
  } else if (mode == "hints") {
    Hints();
  } else if (mode == "order") {
    Order();
  } else {
    Mismatch("unknown mode " + mode);
  }
  lmdx_finalize();
  return 0;
}
