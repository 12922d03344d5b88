// `lmdx bench overlap`, LMDX's side: the measures of overlap_common.h over lmdx_isend,
// lmdx_irecv and lmdx_wait_request between ranks 0 and 1.
#include <lmdx/lmdx.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "benchmarks/net/overlap_common.h"

namespace {

class LmdxChannel : public lmdx::bench::OverlapChannel {
 public:
  int rank() override { return lmdx_rank(); }
  int isend(const void* buf, std::size_t len, int tag) override {
    requests_.push_back(nullptr);
    Check(lmdx_isend(1 - rank(), tag, buf, len, LMDX_NET_ANY, &requests_.back()), "lmdx_isend");
    return static_cast<int>(requests_.size() - 1);
  }
  int irecv(void* buf, std::size_t cap, int tag) override {
    requests_.push_back(nullptr);
    Check(lmdx_irecv(1 - rank(), tag, buf, cap, &requests_.back()), "lmdx_irecv");
    return static_cast<int>(requests_.size() - 1);
  }
  void wait(int slot) override {
    Check(lmdx_wait_request(&requests_[static_cast<std::size_t>(slot)], nullptr),
          "lmdx_wait_request");
    // Slots are reused once every request is done.
    bool all_done = true;
    for (lmdx_request_t request : requests_) all_done &= request == nullptr;
    if (all_done) requests_.clear();
  }
  [[noreturn]] void fail(const std::string& message) override {
    lmdx_abort(1, message.c_str());
    std::abort();
  }

 private:
  void Check(int code, const char* call) {
    if (code != LMDX_OK) fail(std::string(call) + " failed: " + lmdx_strerror(code));
  }
  std::vector<lmdx_request_t> requests_;
};

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  CLI::App app("overlap: LogP parameters and overlap of non-blocking LMDX messages");
  bool quick = false;
  app.add_flag("--quick", quick, "three sizes and short phases (figures meaningless)");
  CLI11_PARSE(app, argc, argv);
  if (lmdx_size() != 2) {
    if (lmdx_rank() == 0) std::fprintf(stderr, "overlap: runs on 2 nodes (-n 2)\n");
    lmdx_finalize();
    return 2;
  }
  LmdxChannel channel;
  lmdx::bench::MeasureOverlap(
      channel, quick ? lmdx::bench::QuickOverlapOptions() : lmdx::bench::OverlapOptions{});
  lmdx_finalize();
  return 0;
}
