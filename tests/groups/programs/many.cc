// Consecutive small collectives of every kind over two groups, through the C++ API (lmdx::group);
// each result is checked exactly, so two collectives that mixed would show. Usage: many COUNT.
// Prints "rank R: COUNT collectives in order".
#include <lmdx/lmdx.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tests/groups/programs/common.h"

namespace {

using group_checks::Check;

void Step(lmdx::group& g, const std::vector<int>& members, std::int64_t k) {
  const int n = g.size();
  const int me = g.rank();
  switch ((k / 2) % 4) {
    case 0: {
      const int root = static_cast<int>(k % n);
      std::array<std::int64_t, 3> value{-1, -1, -1};
      if (me == root) value = {k, root, 7 * k};
      g.bcast(root, std::span(value));
      Check(value[0] == k && value[1] == root && value[2] == 7 * k,
            "bcast " + std::to_string(k) + " delivered " + std::to_string(value[0]));
      break;
    }
    case 1: {
      const int root = static_cast<int>((k * 7) % n);
      std::int64_t mine = k * 1000 + me;
      std::vector<std::int64_t> all(me == root ? n : 0, -1);
      g.gather(root, std::span(&mine, 1), std::span(all));
      for (int i = 0; i < static_cast<int>(all.size()); ++i) {
        Check(all[static_cast<std::size_t>(i)] == k * 1000 + i,
              "gather " + std::to_string(k) + ": block " + std::to_string(i) + " is " +
                  std::to_string(all[static_cast<std::size_t>(i)]));
      }
      break;
    }
    case 2: {
      std::vector<std::int64_t> out(static_cast<std::size_t>(n)),
          in(static_cast<std::size_t>(n), -1);
      for (int j = 0; j < n; ++j) out[static_cast<std::size_t>(j)] = k * 1000000 + me * 1000 + j;
      g.alltoall(std::span(out), std::span(in));
      for (int i = 0; i < n; ++i) {
        Check(in[static_cast<std::size_t>(i)] == k * 1000000 + i * 1000 + me,
              "alltoall " + std::to_string(k) + ": block " + std::to_string(i) + " is " +
                  std::to_string(in[static_cast<std::size_t>(i)]));
      }
      break;
    }
    default: {
      const int sender = static_cast<int>(k % n);
      if (me == sender) {
        const std::array<std::int64_t, 2> message{k, sender};
        g.send(std::span(message));
      } else {
        std::array<std::int64_t, 2> message{-1, -1};
        lmdx::status status = g.recv(std::span(message));
        Check(status.source == members[static_cast<std::size_t>(sender)] &&
                  status.length == sizeof message && message[0] == k && message[1] == sender,
              "group send " + std::to_string(k) + ": got " + std::to_string(message[0]) +
                  " from rank " + std::to_string(status.source));
      }
      break;
    }
  }
}

}  // namespace

int Run(int argc, char** argv) {
  lmdx::init_spmd(argc, argv);
  if (argc < 2) group_checks::Die("usage: many COUNT");
  const std::int64_t count = std::strtoll(argv[1], nullptr, 10);
  const int n = lmdx::size();
  std::vector<int> all, reversed;
  for (int r = 0; r < n; ++r) {
    all.push_back(r);
    reversed.insert(reversed.begin(), r);
  }
  lmdx::group forward("all", all);
  lmdx::group backward("reversed", reversed);
  Check(forward.rank() == lmdx::rank() && backward.rank() == n - 1 - lmdx::rank(), "group indices");
  for (std::int64_t k = 0; k < count; ++k) {
    if (k % 2 == 0) {
      Step(forward, all, k);
    } else {
      Step(backward, reversed, k);
    }
  }
  std::printf("rank %d: %lld collectives in order\n", lmdx::rank(), static_cast<long long>(count));
  std::fflush(stdout);
  lmdx::finalize();
  return 0;
}

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& error) {
    group_checks::Die(std::string("exception: ") + error.what());
  }
}
