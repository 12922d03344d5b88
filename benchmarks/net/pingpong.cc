// Ping-pong between ranks 0 and 1 of an LMDX job over the public C API only, as a user's program
// would do it: half round-trip latency and bandwidth per message size. Run it with
// `lmdx bench pingpong` (beside OpenMPI) or `lmdx run <this binary> -n 2 [-- flags]`.
#include <lmdx/lmdx.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "benchmarks/net/pingpong_common.h"

namespace lmdx::bench {
namespace {

class LmdxChannel final : public PingPongChannel {
 public:
  explicit LmdxChannel(int peer) : peer_(peer) {}

  // Errors are fatal in LMDX's default mode: a failed call ends the job with its own message.
  void send(const void* buf, std::size_t len) override { lmdx_send(peer_, buf, len); }

  std::size_t recv(void* buf, std::size_t cap) override {
    lmdx_status status{};
    lmdx_recv(peer_, buf, cap, &status);
    return status.length;
  }

  [[noreturn]] void fail(const std::string& message) override {
    lmdx_abort(1, message.c_str());
    std::abort();  // lmdx_abort does not return; this tells the compiler so.
  }

 private:
  int peer_;
};

}  // namespace
}  // namespace lmdx::bench

static int Main(int argc, char** argv) {
  // lmdx_init_spmd removes LMDX's own options, so CLI11 sees only the benchmark's.
  lmdx_init_spmd(&argc, &argv);
  const int rank = lmdx_rank();

  lmdx::bench::PingPongOptions options;
  CLI::App app{"LMDX ping-pong between ranks 0 and 1: half round-trip latency and bandwidth"};
  lmdx::bench::add_pingpong_flags(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    lmdx_finalize();
    return code;
  }
  if (lmdx_size() < 2) {
    if (rank == 0) std::fprintf(stderr, "pingpong: needs 2 nodes (-n 2), got %d\n", lmdx_size());
    lmdx_finalize();
    return 2;
  }

  lmdx::bench::LmdxChannel channel(rank == 0 ? 1 : 0);
  lmdx::bench::run_pingpong(options, rank, channel, std::cout);
  lmdx_finalize();
  return 0;
}

// Anything that escapes is a bug, but it still ends with a line, not a bare abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "pingpong: " << error.what() << "\n";
    return 1;
  }
}
