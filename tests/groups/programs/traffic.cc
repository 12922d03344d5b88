// The scalability of group calls, counted rather than timed: each node's per-type traffic
// counters (net::Node::counters through groups::Service::TrafficOf) before and after one call,
// sent to rank 0, which checks them and prints one line per call. A root that sent one frame
// per member, or a member that received more than its share, fails the job.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "groups/service.h"
#include "groups/tree.h"
#include "tests/groups/programs/common.h"

namespace {

using lmdx::groups::Kind;
using group_checks::Check;
using group_checks::Ok;

struct Counts {
  std::int64_t sent = 0;
  std::int64_t received = 0;
};

Counts Now(Kind kind) {
  lmdx::groups::Traffic traffic = lmdx::groups::Current().TrafficOf(kind);
  return {static_cast<std::int64_t>(traffic.sent_frames),
          static_cast<std::int64_t>(traffic.received_frames)};
}

// Runs call on every rank and returns every rank's frames of kind (at rank 0; empty elsewhere).
template <typename Call>
std::vector<Counts> Measure(Kind kind, Call call) {
  // Counted before the barrier: once past it, a root may send before this node has left it.
  Counts before = Now(kind);
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  call();
  // A member may leave a call before it has passed the frame on (a receive that found its
  // message queued): once every member has left its call, every frame has arrived.
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  Counts after = Now(kind);
  Counts delta{after.sent - before.sent, after.received - before.received};
  // Collected with raw messages: a gather would be counted with the gathers it measures.
  if (lmdx_rank() != 0) {
    Ok(lmdx_send(0, &delta, sizeof delta), "lmdx_send");
    return {};
  }
  std::vector<Counts> every(static_cast<std::size_t>(lmdx_size()));
  every[0] = delta;
  for (int r = 1; r < lmdx_size(); ++r) {
    lmdx_status status{};
    Ok(lmdx_recv(r, &every[static_cast<std::size_t>(r)], sizeof(Counts), &status), "lmdx_recv");
  }
  return every;
}

std::int64_t Total(const std::vector<Counts>& every, bool sent) {
  std::int64_t total = 0;
  for (const Counts& c : every) total += sent ? c.sent : c.received;
  return total;
}

// One root (or sender) and a tree: the root sends ceil(log2 n) frames, nobody sends more, every
// other member receives exactly one, n - 1 in all.
void ReportTree(const char* what, int root, const std::vector<Counts>& every, int n) {
  std::int64_t most = 0;
  bool one_each = true;
  for (int r = 0; r < n; ++r) {
    most = std::max(most, every[static_cast<std::size_t>(r)].sent);
    if (r != root) one_each &= every[static_cast<std::size_t>(r)].received == 1;
  }
  const std::int64_t root_sent = every[static_cast<std::size_t>(root)].sent;
  std::printf(
      "rank 0: %s from rank %d: the root sent %lld frames (ceil(log2 %d) = %d), at most "
      "%lld at any member, %s, %lld in all\n",
      what, root, static_cast<long long>(root_sent), n, lmdx::groups::Rounds(n),
      static_cast<long long>(most),
      one_each ? "every other member received 1" : "NOT one received each",
      static_cast<long long>(Total(every, true)));
  Check(root_sent == lmdx::groups::Rounds(n) && most <= lmdx::groups::Rounds(n) && one_each &&
            Total(every, true) == n - 1 && Total(every, false) == n - 1,
        std::string(what) + ": traffic beyond the tree's");
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  const int n = lmdx_size();
  const int rank = lmdx_rank();
  std::vector<int> ranks(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) ranks[static_cast<std::size_t>(r)] = r;
  lmdx_group_t all = lmdx_group_create("all", ranks.data(), n);
  Check(all != nullptr, "lmdx_group_create");
  std::vector<std::uint8_t> buffer(4096, 1);
  std::vector<std::uint8_t> blocks(4096 * static_cast<std::size_t>(n), 2);
  std::vector<std::uint8_t> received(4096 * static_cast<std::size_t>(n));

  for (int root : {0, n / 2 + 1 < n ? n / 2 + 1 : 0}) {
    auto every = Measure(Kind::kBcast, [&] {
      Ok(lmdx_bcast(all, root, buffer.data(), buffer.size()), "lmdx_bcast");
    });
    if (rank == 0) ReportTree("bcast of 4 KiB", root, every, n);
  }

  {
    auto every = Measure(Kind::kGather, [&] {
      Ok(lmdx_gather(all, 0, buffer.data(), buffer.size(), received.data()), "lmdx_gather");
    });
    if (rank == 0) {
      // The reverse tree: the root receives ceil(log2 n) frames, every other member sends one.
      bool one_each = true;
      for (int r = 1; r < n; ++r) one_each &= every[static_cast<std::size_t>(r)].sent == 1;
      std::printf(
          "rank 0: gather of 4 KiB to rank 0: the root received %lld frames, %s, %lld in "
          "all\n",
          static_cast<long long>(every[0].received),
          one_each ? "every other member sent 1" : "NOT one sent each",
          static_cast<long long>(Total(every, true)));
      Check(every[0].received == lmdx::groups::Rounds(n) && every[0].sent == 0 && one_each &&
                Total(every, true) == n - 1,
            "gather: traffic beyond the tree's");
    }
  }

  {
    auto every = Measure(Kind::kAlltoall, [&] {
      Ok(lmdx_alltoall(all, blocks.data(), 4096, received.data()), "lmdx_alltoall");
    });
    if (rank == 0) {
      bool share = true;
      for (const Counts& c : every) share &= c.sent == n - 1 && c.received == n - 1;
      std::printf("rank 0: alltoall of 4 KiB blocks: %s\n",
                  share ? ("every member sent " + std::to_string(n - 1) + " frames and received " +
                           std::to_string(n - 1))
                              .c_str()
                        : "NOT every member sent and received its share");
      Check(share, "alltoall: a member sent or received more than its share");
    }
  }

  {
    const int sender = 3 % n;
    auto every = Measure(Kind::kSend, [&] {
      if (rank == sender) {
        Ok(lmdx_group_send(all, buffer.data(), buffer.size()), "lmdx_group_send");
      } else {
        lmdx_status status{};
        Ok(lmdx_group_recv(all, received.data(), received.size(), &status), "lmdx_group_recv");
      }
    });
    if (rank == 0) ReportTree("group send of 4 KiB", sender, every, n);
  }

  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}
