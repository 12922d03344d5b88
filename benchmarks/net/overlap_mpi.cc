// `lmdx bench overlap`, OpenMPI's side: the measures of overlap_common.h over MPI_Isend,
// MPI_Irecv and MPI_Wait between ranks 0 and 1.
#include <openmpi/mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/net/overlap_common.h"

namespace {

class MpiChannel : public lmdx::bench::OverlapChannel {
 public:
  int rank() override {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    return me;
  }
  int isend(const void* buf, std::size_t len, int tag) override {
    requests_.push_back(MPI_REQUEST_NULL);
    MPI_Isend(buf, static_cast<int>(len), MPI_BYTE, 1 - rank(), tag, MPI_COMM_WORLD,
              &requests_.back());
    return static_cast<int>(requests_.size() - 1);
  }
  int irecv(void* buf, std::size_t cap, int tag) override {
    requests_.push_back(MPI_REQUEST_NULL);
    MPI_Irecv(buf, static_cast<int>(cap), MPI_BYTE, 1 - rank(), tag, MPI_COMM_WORLD,
              &requests_.back());
    return static_cast<int>(requests_.size() - 1);
  }
  void wait(int slot) override {
    MPI_Wait(&requests_[static_cast<std::size_t>(slot)], MPI_STATUS_IGNORE);
    bool all_done = true;
    for (MPI_Request request : requests_) all_done &= request == MPI_REQUEST_NULL;
    if (all_done) requests_.clear();
  }
  [[noreturn]] void fail(const std::string& message) override {
    std::fprintf(stderr, "overlap_mpi: %s\n", message.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  std::vector<MPI_Request> requests_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app("overlap_mpi: LogP parameters and overlap of non-blocking MPI messages");
  bool quick = false;
  app.add_flag("--quick", quick, "three sizes and short phases (figures meaningless)");
  CLI11_PARSE(app, argc, argv);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    std::fprintf(stderr, "overlap_mpi: runs on 2 ranks (-n 2)\n");
    MPI_Finalize();
    return 2;
  }
  MpiChannel channel;
  lmdx::bench::MeasureOverlap(
      channel, quick ? lmdx::bench::QuickOverlapOptions() : lmdx::bench::OverlapOptions{});
  MPI_Finalize();
  return 0;
}
