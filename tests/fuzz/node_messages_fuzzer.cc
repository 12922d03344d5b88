// Frames from a peer that passed the handshake but sends nonsense (a bug, a version mix-up): every
// handler that parses a body (sync, dsm and consistency, ports, groups) gets arbitrary bodies and
// payloads, through the node's own dispatch, in a job of one node started at initialisation.
// A handler may refuse, reply with an error or log; it must not crash the node or hang.
//
// The threads layer's types are left out on purpose: a thread start names a function of the
// program by address, which a peer of the same job is trusted to give (docs/threads.md).
#include <lmdx/lmdx.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "api/internal/runtime_state.h"
#include "net/wire.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  if (lmdx_init_spmd(argc, argv) != LMDX_OK) return 1;
  // The node ends in order when the run does, so the leak check sees what it really leaked.
  std::atexit([] { lmdx_finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lmdx::net;
  Node* node = lmdx::api::CurrentNode();
  if (node == nullptr) return 0;
  lmdx::fuzz::FuzzInput input(data, size);
  // sync 100..199, dsm and consistency 200..399, ports and groups 500..599.
  int pick = (input.Byte() << 8 | input.Byte()) % 400;
  int type = pick < 300 ? 100 + pick : 500 + (pick - 300);
  std::uint8_t flags = input.Byte();
  InboundMessage message;
  message.header.type = static_cast<MessageType>(type);
  message.header.source = 0;
  message.header.destination = 0;
  message.header.request_id = (flags & 1) != 0 ? 0xf000000000000000ull + input.U32() : 0;
  message.body = input.Piece();
  std::string payload = input.Rest();
  message.header.body_length = static_cast<std::uint32_t>(message.body.size());
  message.header.payload_length = payload.size();
  if (!payload.empty()) {
    message.owned_payload = lmdx::net::internal::AllocatePayload(payload.size());
    std::memcpy(message.owned_payload.get(), payload.data(), payload.size());
    message.payload = message.owned_payload.get();
  }
  node->OnMessage(std::move(message));
  return 0;
}
