// Semaphores.
//   buffer ITEMS SLOTS: a bounded buffer of SLOTS items kept on rank 0; the first half of the
//     other ranks produce ITEMS items in all, the second half consume them, with semaphores
//     "empty" (SLOTS) and "full" (0). Rank 0 checks the buffer never over- or underflows; each
//     consumer sends its count, sum and sum of squares, which must match the items produced.
//     Prints "rank 0: moved N items, checksums match".
//   fifo: ranks 1..N-1 call lmdx_sema_p on a semaphore of value 0 one after another; rank 0 then
//     calls lmdx_sema_v once per waiter and records who wakes. Prints "rank 0: woke in order ...".
#include <unistd.h>

#include <deque>
#include <string>

#include "tests/sync/programs/common.h"

using sync_checks::Op;

namespace {

enum { kPut = 1, kGet = 2, kDone = 3 };

struct Sums {
  std::uint64_t count = 0, sum = 0, squares = 0;
  void Add(std::uint64_t v) {
    ++count;
    sum += v;
    squares += v * v;
  }
};

std::uint64_t Item(int producer, std::int64_t seq) {
  return static_cast<std::uint64_t>(producer) * 1000000007ull + static_cast<std::uint64_t>(seq) + 1;
}

void Buffer(int items, int slots) {
  int rank = lmdx_rank(), size = lmdx_size();
  int workers = size - 1;
  int producers = workers / 2, consumers = workers - producers;
  sync_checks::Check(producers > 0 && consumers > 0, "needs at least 3 ranks");
  sync_checks::Check(items % producers == 0 && items % consumers == 0, "ITEMS must divide evenly");
  sync_checks::Ok(lmdx_sema_init("empty", slots), "lmdx_sema_init");
  sync_checks::Ok(lmdx_sema_init("full", 0), "lmdx_sema_init");
  lmdx_barrier_all();
  if (rank == 0) {
    std::deque<std::int64_t> buffer;
    Sums consumed;
    int done = 0;
    while (done < consumers) {
      Op op{};
      lmdx_status status{};
      sync_checks::Ok(lmdx_recv(LMDX_ANY_SOURCE, &op, sizeof op, &status), "lmdx_recv");
      if (op.op == kPut) {
        buffer.push_back(op.value);
        sync_checks::Check(static_cast<int>(buffer.size()) <= slots, "the buffer overflowed");
        sync_checks::Answer(status.source, op);
      } else if (op.op == kGet) {
        sync_checks::Check(!buffer.empty(), "a consumer found the buffer empty");
        sync_checks::Answer(status.source, {kGet, buffer.front()});
        buffer.pop_front();
      } else {
        Sums sums;
        sync_checks::Ok(lmdx_recv(status.source, &sums, sizeof sums, nullptr), "lmdx_recv");
        consumed.count += sums.count;
        consumed.sum += sums.sum;
        consumed.squares += sums.squares;
        ++done;
      }
    }
    Sums expected;
    for (int p = 0; p < producers; ++p) {
      for (std::int64_t s = 0; s < items / producers; ++s) expected.Add(Item(p, s));
    }
    sync_checks::Check(buffer.empty(), "items were left in the buffer");
    sync_checks::Check(consumed.count == expected.count && consumed.sum == expected.sum &&
                         consumed.squares == expected.squares,
                     "the consumed items differ from the produced ones: " +
                         std::to_string(consumed.count) + " of " + std::to_string(expected.count));
    std::printf("rank 0: moved %llu items, checksums match\n",
                static_cast<unsigned long long>(consumed.count));
  } else if (rank <= producers) {
    lmdx_sema_t empty = lmdx_sema_find("empty"), full = lmdx_sema_find("full");
    for (std::int64_t s = 0; s < items / producers; ++s) {
      sync_checks::Ok(lmdx_sema_p_h(empty), "lmdx_sema_p");
      sync_checks::Ask({kPut, static_cast<std::int64_t>(Item(rank - 1, s))});
      sync_checks::Ok(lmdx_sema_v_h(full), "lmdx_sema_v");
    }
  } else {
    Sums sums;
    for (std::int64_t s = 0; s < items / consumers; ++s) {
      sync_checks::Ok(LMDX_sema_P(full), "LMDX_sema_P");
      sums.Add(static_cast<std::uint64_t>(sync_checks::Ask({kGet, 0}).value));
      sync_checks::Ok(LMDX_sema_V(empty), "LMDX_sema_V");
    }
    Op done{kDone, 0};
    sync_checks::Ok(lmdx_send(0, &done, sizeof done), "lmdx_send");
    sync_checks::Ok(lmdx_send(0, &sums, sizeof sums), "lmdx_send");
  }
}

void Fifo() {
  int rank = lmdx_rank(), size = lmdx_size();
  sync_checks::Ok(LMDX_sema_init(turns, 0), "LMDX_sema_init");
  lmdx_barrier_all();
  if (rank == 0) {
    for (int k = 1; k < size; ++k) {
      int go = 1, ready = 0;
      sync_checks::Ok(lmdx_send(k, &go, sizeof go), "lmdx_send");
      sync_checks::Ok(lmdx_recv(k, &ready, sizeof ready, nullptr), "lmdx_recv");
      ::usleep(100 * 1000);  // rank k's P has long reached the manager
    }
    std::string order;
    for (int k = 1; k < size; ++k) {
      sync_checks::Ok(LMDX_sema_V(turns), "LMDX_sema_V");
      int woke = -1;
      sync_checks::Ok(lmdx_recv(LMDX_ANY_SOURCE, &woke, sizeof woke, nullptr), "lmdx_recv");
      order += " " + std::to_string(woke);
    }
    std::printf("rank 0: woke in order%s\n", order.c_str());
  } else {
    int go = 0;
    sync_checks::Ok(lmdx_recv(0, &go, sizeof go, nullptr), "lmdx_recv");
    sync_checks::Ok(lmdx_send(0, &rank, sizeof rank), "lmdx_send");
    sync_checks::Ok(LMDX_sema_P(turns), "LMDX_sema_P");
    sync_checks::Ok(lmdx_send(0, &rank, sizeof rank), "lmdx_send");
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "buffer";
  if (mode == "fifo") {
    Fifo();
  } else {
    Buffer(argc > 2 ? std::atoi(argv[2]) : 100000, argc > 3 ? std::atoi(argv[3]) : 16);
  }
  std::fflush(stdout);
  lmdx_barrier_all();
  lmdx_finalize();
  return 0;
}
