// Write notices and knowledge arrive in lock grants and barrier departures from peers: merged,
// trimmed and combined, malformed ones must be refused with lmdx::Error, never crash.
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "consistency/write_notices.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using lmdx::consistency::WriteNoticeLog;
  lmdx::fuzz::FuzzInput input(data, size);
  int nodes = 1 + input.Byte() % 8;
  int rank = input.Byte() % nodes;
  std::vector<std::string> payloads = {input.Piece(), input.Piece()};
  std::string knowledge = input.Piece();
  WriteNoticeLog log(rank, nodes);
  auto attempt = [](auto&& step) {
    try {
      step();
    } catch (const lmdx::Error&) {
    }
  };
  attempt([&] { log.Merge(payloads); });
  attempt([&] { static_cast<void>(WriteNoticeLog::MergeEncoded(payloads, nodes)); });
  attempt([&] { static_cast<void>(WriteNoticeLog::Trim(payloads[0], knowledge)); });
  attempt([&] { static_cast<void>(log.Untrim(payloads[1])); });
  attempt([&] { static_cast<void>(WriteNoticeLog::NewestOf(payloads, rank)); });
  attempt([&] { log.ForgetKnownEverywhere(payloads); });
  return 0;
}
