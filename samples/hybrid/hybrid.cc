// samples/hybrid: messages between modules, shared memory inside one (P-RIO).
//
// The configuration (hybrid.conf) declares two modules: "master" (rank 0), which talks by
// messages only, and "workers" (ranks 1-3), which share memory under a protocol. The master cuts
// an n x n matrix A into work items of a few rows and hands them, as typed messages over the link
// master.work_out -> workers.work_in, to the workers in turn. Each worker writes its rows into
// the shared matrix "hybrid.matrix"; after a barrier among the workers, each computes the rows of
// A x A for its items, which reads every row of A, most of them written by other workers, and
// sends them back over workers.results_out -> master.results_in. The master checks every value
// against its own sequential product and prints "verified" (exit 0), or the first difference
// (exit 1).
//
//   ./lmdx run hybrid -n 4 [-- --rows N --rows-per-item K --seed S]
//
// --wrong-result makes worker 1 add 1 to its first value, so the check can be seen to fail.
#include <lmdx/lmdx.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "samples/hybrid/hybrid.pb.h"

namespace {

using lmdx::samples::hybrid::Result;
using lmdx::samples::hybrid::WorkItem;

struct Options {
  int rows = 64;
  int rows_per_item = 4;
  std::uint64_t seed = 1;
  bool wrong_result = false;
};

// Every rank parses the same arguments, so a mistake stops every rank alike.
bool ParseOptions(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](long low, long high, long& out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      out = std::strtol(argv[++i], &end, 10);
      return *end == '\0' && out >= low && out <= high;
    };
    long number = 0;
    if (arg == "--rows" && value(1, 1024, number)) {
      options.rows = static_cast<int>(number);
    } else if (arg == "--rows-per-item" && value(1, 1024, number)) {
      options.rows_per_item = static_cast<int>(number);
    } else if (arg == "--seed" && value(0, 1L << 30, number)) {
      options.seed = static_cast<std::uint64_t>(number);
    } else if (arg == "--wrong-result") {
      options.wrong_result = true;
    } else {
      std::fprintf(stderr,
                   "hybrid: bad argument '%s'; usage: hybrid [--rows 1-1024] "
                   "[--rows-per-item 1-1024] [--seed N] [--wrong-result]\n",
                   argv[i]);
      return false;
    }
  }
  return true;
}

// A's entry (i, j): 0 to 99, from the seed (splitmix64).
std::int64_t Entry(std::uint64_t seed, int i, int j) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(i) * 1000003ULL +
                    static_cast<std::uint64_t>(j);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<std::int64_t>(x % 100);
}

int Master(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) return 2;
  if (lmdx::module_size() != 1) {
    std::fprintf(stderr, "hybrid: the module \"%s\" must have one rank, not %d\n",
                 lmdx::module_name().c_str(), lmdx::module_size());
    return 2;
  }
  const int n = options.rows;
  auto results = lmdx::module_port<Result>("results_in");
  auto work = lmdx::link<WorkItem>("work_out");
  const int workers = work.size();

  // Hand out the items, one worker after the other.
  int items = 0;
  for (int first = 0; first < n; first += options.rows_per_item, ++items) {
    WorkItem item;
    item.set_id(static_cast<std::uint32_t>(items));
    item.set_n(static_cast<std::uint32_t>(n));
    int count = std::min(options.rows_per_item, n - first);
    item.set_first_row(static_cast<std::uint32_t>(first));
    item.set_row_count(static_cast<std::uint32_t>(count));
    for (int i = first; i < first + count; ++i) {
      for (int j = 0; j < n; ++j) item.add_values(Entry(options.seed, i, j));
    }
    work.send(items % workers, item);
  }
  WorkItem last;
  last.set_n(static_cast<std::uint32_t>(n));
  last.set_last(true);
  work.send_all(last);
  std::printf("hybrid: %d work items of a %dx%d matrix over %s to %d members of %s\n", items, n, n,
              work.port().c_str(), workers, work.to().c_str());
  std::fflush(stdout);

  // The same product, sequentially.
  std::vector<std::int64_t> expected(static_cast<std::size_t>(n) * n, 0);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      std::int64_t a = Entry(options.seed, i, k);
      for (int j = 0; j < n; ++j) {
        expected[static_cast<std::size_t>(i) * n + j] += a * Entry(options.seed, k, j);
      }
    }
  }

  std::vector<std::int64_t> got(static_cast<std::size_t>(n) * n, 0);
  std::vector<int> from(static_cast<std::size_t>(n), -1);  // the worker of each row
  std::map<std::uint32_t, int> seen;
  for (int received = 0; received < items; ++received) {
    auto [result, source] = results.recv();
    if (result.id() >= static_cast<std::uint32_t>(items) || seen.count(result.id()) != 0 ||
        result.first_row() + result.row_count() > static_cast<std::uint32_t>(n) ||
        result.values_size() != static_cast<int>(result.row_count()) * n) {
      std::printf("hybrid: rank %d sent a malformed result for item %u\n", source, result.id());
      return 1;
    }
    seen[result.id()] = source;
    for (int r = 0; r < static_cast<int>(result.row_count()); ++r) {
      int row = static_cast<int>(result.first_row()) + r;
      from[static_cast<std::size_t>(row)] = result.worker();
      for (int j = 0; j < n; ++j) {
        got[static_cast<std::size_t>(row) * n + j] = result.values(r * n + j);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (from[static_cast<std::size_t>(i)] < 0) {
      std::printf("hybrid: no result for row %d\n", i);
      return 1;
    }
    for (int j = 0; j < n; ++j) {
      std::size_t at = static_cast<std::size_t>(i) * n + j;
      if (got[at] != expected[at]) {
        std::printf(
            "hybrid: first difference at row %d, column %d: got %lld, expected %lld "
            "(from worker %d)\n",
            i, j, static_cast<long long>(got[at]), static_cast<long long>(expected[at]),
            from[static_cast<std::size_t>(i)]);
        return 1;
      }
    }
  }
  std::printf("verified\n");
  return 0;
}

int Worker(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) return 2;
  auto work = lmdx::module_port<WorkItem>("work_in");
  auto results = lmdx::link<Result>("results_out");

  // Place the rows of every item in the shared matrix, until the master says it is done.
  std::vector<WorkItem> mine;
  std::int64_t* a = nullptr;
  int n = 0;
  for (;;) {
    WorkItem item = work.recv().message;
    if (a == nullptr) {
      n = static_cast<int>(item.n());
      a = static_cast<std::int64_t*>(
          lmdx_shared_var("hybrid.matrix", static_cast<std::size_t>(n) * n * sizeof *a));
    }
    if (item.last()) break;
    for (int v = 0; v < item.values_size(); ++v) {
      a[static_cast<std::size_t>(item.first_row()) * n + v] = item.values(v);
    }
    item.clear_values();
    mine.push_back(std::move(item));
  }

  // Every worker's rows are in place once all have arrived.
  lmdx_barrier_init("hybrid.rows_placed", lmdx::module_size());
  lmdx_barrier("hybrid.rows_placed");

  for (const WorkItem& item : mine) {
    Result result;
    result.set_id(item.id());
    result.set_first_row(item.first_row());
    result.set_row_count(item.row_count());
    result.set_worker(lmdx::module_rank());
    for (int i = static_cast<int>(item.first_row());
         i < static_cast<int>(item.first_row() + item.row_count()); ++i) {
      for (int j = 0; j < n; ++j) {
        std::int64_t sum = 0;
        for (int k = 0; k < n; ++k) {
          sum += a[static_cast<std::size_t>(i) * n + k] * a[static_cast<std::size_t>(k) * n + j];
        }
        result.add_values(sum);
      }
    }
    if (options.wrong_result && lmdx::module_rank() == 1 && &item == &mine.front()) {
      result.set_values(0, result.values(0) + 1);
    }
    results.send(0, result);
  }
  return 0;
}

// Reports an exception (in the throwing error mode) instead of letting it end the process.
template <int (*Body)(int, char**)>
int Reporting(int argc, char** argv) {
  try {
    return Body(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hybrid: %s\n", error.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  static const lmdx_module_entry kEntries[] = {
      {"master", Reporting<Master>}, {"workers", Reporting<Worker>}, {nullptr, nullptr}};
  int status = lmdx_run_modules(kEntries);
  lmdx_finalize();
  return status;
}
