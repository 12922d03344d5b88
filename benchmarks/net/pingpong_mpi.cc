// The ping-pong of pingpong.cc over MPI_Send/MPI_Recv: the reference LMDX is measured against in
// the same run (`lmdx bench pingpong`). Start it with `mpirun -n 2`.
#include <openmpi/mpi.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "benchmarks/net/pingpong_common.h"

namespace lmdx::bench {
namespace {

class MpiChannel final : public PingPongChannel {
 public:
  explicit MpiChannel(int peer) : peer_(peer) {}

  void send(const void* buf, std::size_t len) override {
    MPI_Send(buf, count(len), MPI_BYTE, peer_, kTag, MPI_COMM_WORLD);
  }

  std::size_t recv(void* buf, std::size_t cap) override {
    MPI_Status status;
    // A longer message makes MPI_Recv fail with MPI_ERR_TRUNCATE, fatal by default.
    MPI_Recv(buf, count(cap), MPI_BYTE, peer_, kTag, MPI_COMM_WORLD, &status);
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    return static_cast<std::size_t>(received);
  }

  [[noreturn]] void fail(const std::string& message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();  // MPI_Abort does not return; this tells the compiler so.
  }

 private:
  static constexpr int kTag = 7;

  // MPI counts are ints; the sizes here stay far below, but say so rather than wrap.
  int count(std::size_t len) {
    if (len > static_cast<std::size_t>(INT_MAX)) fail("pingpong_mpi: message over 2 GiB");
    return static_cast<int>(len);
  }

  int peer_;
};

}  // namespace
}  // namespace lmdx::bench

static int Main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  lmdx::bench::PingPongOptions options;
  CLI::App app{"MPI ping-pong between ranks 0 and 1: half round-trip latency and bandwidth"};
  lmdx::bench::add_pingpong_flags(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same arguments; let rank 0 alone speak.
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return code;
  }
  if (size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "pingpong_mpi: needs 2 ranks (mpirun -n 2), got %d\n", size);
    MPI_Finalize();
    return 2;
  }

  lmdx::bench::MpiChannel channel(rank == 0 ? 1 : 0);
  lmdx::bench::run_pingpong(options, rank, channel, std::cout);
  MPI_Finalize();
  return 0;
}

// Anything that escapes is a bug, but it still ends with a line, not a bare abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "pingpong_mpi: " << error.what() << "\n";
    return 1;
  }
}
