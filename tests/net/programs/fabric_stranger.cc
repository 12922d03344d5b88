// Rank 1 plays a stranger on the fabric: from a UCX worker of its own, which knows rank 0's
// advertised address but not the job secret, it sends rank 0 active messages with LMDX's id: one
// too short to hold a header, a frame with a made-up pair token (small, then large enough for
// UCX's rendezvous), and one claiming a rank the job does not have. Then the small-message form,
// whose header leads the data: too short, with a made-up token, large enough for the rendezvous,
// and its header sent as UCX's. None may reach the program.
// Then rank 1 sends a real message; rank 0 must receive exactly it and nothing else. Both print
// "verified" at the end. Run with LMDX_TRANSPORT=fabric and 2 nodes.
#include <lmdx/lmdx.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/internal/runtime_state.h"
#include "net/wire.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  lmdx_abort(2, ("rank " + std::to_string(lmdx_rank()) + ": " + what).c_str());
  std::abort();
}

constexpr unsigned kFabricAmId = 0x4c4d;  // the id net/fabric/internal/ucx_am_header.h gives LMDX's
const char kReal[] = "the real message";

void Check(ucs_status_t status, const char* what) {
  if (status != UCS_OK) Fail(std::string(what) + ": " + ucs_status_string(status));
}

std::string FromHex(const std::string& text) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

void PutLittle(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

// LMDX's layout with a token of the stranger's choosing.
std::vector<std::uint8_t> ForgedHeader(std::int32_t claimed_source, std::size_t payload) {
  std::vector<std::uint8_t> header(24 + lmdx::net::kFrameHeaderSize);
  PutLittle(header, 0, 0x0123456789abcdefULL, 8);  // a guess at the pair token
  PutLittle(header, 8, 0, 8);                      // sequence
  PutLittle(header, 16, 0, 4);                     // flags
  PutLittle(header, 20, static_cast<std::uint32_t>(claimed_source), 4);
  lmdx::net::FrameHeader frame;
  frame.type = lmdx::net::MessageType::kRaw;
  frame.source = claimed_source;
  frame.destination = 0;
  frame.payload_length = payload;
  lmdx::net::EncodeFrameHeader(frame, header.data() + 24);
  return header;
}

// A small raw message's header (net/fabric/internal/ucx_am_header.h) with a token of the stranger's
// choosing, and payload bytes after it.
std::vector<std::uint8_t> ForgedSmallMessage(std::size_t payload) {
  std::vector<std::uint8_t> message(28 + payload, 's');
  PutLittle(message, 0, 0x0123456789abcdefULL, 8);  // a guess at the pair token
  PutLittle(message, 8, 0, 4);                      // sequence
  PutLittle(message, 12, 1, 4);                     // source
  PutLittle(message, 16, 0, 4);                     // tag
  PutLittle(message, 20, 0, 8);                     // raw sequence
  return message;
}

// A UCX worker that is no part of the job.
class Stranger {
 public:
  explicit Stranger(const std::string& address) {
    ucp_config_t* config = nullptr;
    Check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    Check(ucp_init(&params, config, &context_), "ucp_init");
    ucp_config_release(config);
    ucp_worker_params_t worker_params{};
    Check(ucp_worker_create(context_, &worker_params, &worker_), "ucp_worker_create");
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = reinterpret_cast<const ucp_address_t*>(address.data());
    Check(ucp_ep_create(worker_, &ep_params, &endpoint_), "ucp_ep_create");
  }
  ~Stranger() {
    ucp_request_param_t param{};
    Wait(ucp_ep_close_nbx(endpoint_, &param));
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
  }

  void Send(const std::vector<std::uint8_t>& header, const std::vector<std::uint8_t>& data) {
    ucp_request_param_t param{};
    Wait(ucp_am_send_nbx(endpoint_, kFabricAmId, header.data(), header.size(), data.data(),
                         data.size(), &param));
  }

 private:
  void Wait(ucs_status_ptr_t request) {
    if (request == nullptr || UCS_PTR_IS_ERR(request)) return;
    while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker_);
    ucp_request_free(request);
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h endpoint_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 2) Fail("run this test with 2 nodes");
  if (lmdx_rank() == 1) {
    std::string address;
    for (const auto& endpoint : lmdx::api::CurrentNode()->job_table().nodes(0).endpoints()) {
      if (endpoint.transport() == "fabric") address = FromHex(endpoint.address());
    }
    if (address.empty()) Fail("rank 0 advertises no fabric endpoint");
    {
      Stranger stranger(address);
      stranger.Send(std::vector<std::uint8_t>(8, 0x5a), {});
      stranger.Send(ForgedHeader(1, 5), std::vector<std::uint8_t>(5, 'x'));
      stranger.Send(ForgedHeader(1, 4 << 20), std::vector<std::uint8_t>(4 << 20, 'y'));
      stranger.Send(ForgedHeader(7, 5), std::vector<std::uint8_t>(5, 'z'));
      stranger.Send({}, std::vector<std::uint8_t>(5, 'h'));
      stranger.Send({}, ForgedSmallMessage(5));
      stranger.Send({}, ForgedSmallMessage(4 << 20));
      std::vector<std::uint8_t> as_header = ForgedSmallMessage(0);
      stranger.Send(as_header, std::vector<std::uint8_t>(5, 'u'));
    }
    std::printf("rank 1: the stranger's messages went out\n");
    // The stranger's messages came by another endpoint: give rank 0 time to have read them
    // before the real one, so that a forged message accepted would be received first.
    ::usleep(300 * 1000);
    lmdx_send(0, kReal, sizeof kReal);
  } else {
    std::vector<char> buffer(8 << 20);
    lmdx_status status;
    lmdx_recv(1, buffer.data(), buffer.size(), &status);
    if (status.length != sizeof kReal || std::memcmp(buffer.data(), kReal, sizeof kReal) != 0) {
      Fail("received " + std::to_string(status.length) + " bytes that are not the real message");
    }
    if (lmdx_try_recv(LMDX_ANY_SOURCE, buffer.data(), buffer.size(), &status) != 1) {
      Fail("a second message arrived, of " + std::to_string(status.length) + " bytes");
    }
  }
  lmdx_barrier_all();
  std::printf("rank %d verified\n", lmdx_rank());
  lmdx_finalize();
  return 0;
}
