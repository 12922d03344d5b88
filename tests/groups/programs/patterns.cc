// Every group call's data checked byte for byte against what each rank computes alone.
// Usage: patterns MAX_BYTES. Groups: every rank in order ("all"), every rank in reverse order
// ("reversed": indices differ from ranks), and the even and odd ranks ("evens", "odds"), which run
// different collectives at the same time. Sizes 0 B, 1 B, 4 KiB and 1 MiB up to MAX_BYTES; roots
// the first, the last and the middle index. Ends with buffers in shared memory. Prints
// "rank R: patterns ok (N calls)".
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/groups/programs/common.h"

namespace {

using group_checks::Check;
using group_checks::Die;
using group_checks::Expect;
using group_checks::Fill;
using group_checks::Ok;

int calls = 0;

struct Group {
  lmdx_group_t handle = nullptr;
  std::string name;
  std::vector<int> members;
  int me = -1;
  int n = 0;
  mutable int steps = 0;  // calls made on this group: the same count on every member
};

Group Make(const char* name, const std::vector<int>& members) {
  Group group;
  group.name = name;
  group.members = members;
  group.handle = lmdx_group_create(name, members.data(), static_cast<int>(members.size()));
  Check(group.handle != nullptr, std::string("lmdx_group_create ") + name);
  group.n = lmdx_group_size(group.handle);
  group.me = lmdx_group_rank(group.handle);
  Check(group.n == static_cast<int>(members.size()), std::string(name) + ": wrong size");
  auto it = std::find(members.begin(), members.end(), lmdx_rank());
  int want = it == members.end() ? -1 : static_cast<int>(it - members.begin());
  Check(group.me == want, std::string(name) + ": lmdx_group_rank is " + std::to_string(group.me) +
                              ", expected " + std::to_string(want));
  return group;
}

// The same on every rank for the same call: data of different calls never look alike.
std::uint64_t Salt(const Group& group, const char* op, std::size_t size, int root) {
  std::uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](const std::string& text) {
    for (char c : text) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ull;
    }
  };
  mix(group.name + "/" + op + "/" + std::to_string(size) + "/" + std::to_string(root) + "/" +
      std::to_string(group.steps));
  return hash;
}

std::string What(const Group& group, const char* op, std::size_t size, int root) {
  return std::string(op) + " of " + std::to_string(size) + " B in group " + group.name +
         " (root index " + std::to_string(root) + ")";
}

void Bcast(const Group& g, std::size_t size, int root) {
  std::uint64_t salt = Salt(g, "bcast", size, root);
  std::vector<std::uint8_t> buffer(size);
  Fill(buffer.data(), size, salt, g.me == root ? root : 1000);  // others start with other bytes
  Ok(lmdx_bcast(g.handle, root, buffer.data(), size), "lmdx_bcast");
  Expect(buffer.data(), size, salt, root, What(g, "bcast", size, root));
  ++calls;
  ++g.steps;
}

void Gather(const Group& g, std::size_t size, int root) {
  std::uint64_t salt = Salt(g, "gather", size, root);
  std::vector<std::uint8_t> mine(size);
  Fill(mine.data(), size, salt, g.me);
  bool is_root = g.me == root;
  std::vector<std::uint8_t> all(is_root ? size * g.n : 0);
  Fill(all.data(), all.size(), salt, 1000);
  Ok(lmdx_gather(g.handle, root, mine.data(), size, is_root ? all.data() : nullptr), "lmdx_gather");
  if (is_root) {
    for (int i = 0; i < g.n; ++i) {
      Expect(all.data() + i * size, size, salt, i,
             What(g, "gather", size, root) + ", block " + std::to_string(i));
    }
  }
  Expect(mine.data(), size, salt, g.me, What(g, "gather", size, root) + ": the send buffer");
  ++calls;
  ++g.steps;
}

void Alltoall(const Group& g, std::size_t size) {
  std::uint64_t salt = Salt(g, "alltoall", size, 0);
  const auto n = static_cast<std::size_t>(g.n);
  const auto me = static_cast<std::size_t>(g.me);
  std::vector<std::uint8_t> out(size * n), in(size * n);
  for (std::size_t j = 0; j < n; ++j) Fill(out.data() + j * size, size, salt, me * n + j);
  Fill(in.data(), in.size(), salt, 1u << 30);
  Ok(lmdx_alltoall(g.handle, out.data(), size, in.data()), "lmdx_alltoall");
  for (std::size_t i = 0; i < n; ++i) {
    Expect(in.data() + i * size, size, salt, i * n + me,
           What(g, "alltoall", size, 0) + ", block from index " + std::to_string(i));
  }
  ++calls;
  ++g.steps;
}

// One member sends; every other receives it.
void SendOne(const Group& g, std::size_t size, int sender) {
  std::uint64_t salt = Salt(g, "send", size, sender);
  if (g.me == sender) {
    std::vector<std::uint8_t> data(size);
    Fill(data.data(), size, salt, sender);
    Ok(lmdx_group_send(g.handle, data.data(), size), "lmdx_group_send");
  } else {
    std::vector<std::uint8_t> data(size + 16);
    lmdx_status status{};
    Ok(lmdx_group_recv(g.handle, data.data(), data.size(), &status), "lmdx_group_recv");
    Check(status.source == g.members[static_cast<std::size_t>(sender)] && status.length == size,
          What(g, "group send", size, sender) + ": source " + std::to_string(status.source) +
              ", length " + std::to_string(status.length));
    Expect(data.data(), size, salt, sender, What(g, "group send", size, sender));
  }
  ++calls;
  ++g.steps;
}

// Every member sends at once; each receives one message from every other member.
void SendAll(const Group& g, std::size_t size) {
  std::uint64_t salt = Salt(g, "send-all", size, 0);
  std::vector<std::uint8_t> mine(size);
  Fill(mine.data(), size, salt, g.me);
  Ok(lmdx_group_send(g.handle, mine.data(), size), "lmdx_group_send");
  std::vector<bool> seen(static_cast<std::size_t>(g.n), false);
  std::vector<std::uint8_t> data(size + 16);
  for (int k = 1; k < g.n; ++k) {
    lmdx_status status{};
    Ok(lmdx_group_recv(g.handle, data.data(), data.size(), &status), "lmdx_group_recv");
    auto it = std::find(g.members.begin(), g.members.end(), status.source);
    Check(it != g.members.end(),
          "a group message from non-member " + std::to_string(status.source));
    auto index = static_cast<std::size_t>(it - g.members.begin());
    Check(!seen[index] && static_cast<int>(index) != g.me && status.length == size,
          What(g, "send-all", size, 0) + ": from " + std::to_string(status.source) +
              " twice, from itself, or of length " + std::to_string(status.length));
    seen[index] = true;
    Expect(data.data(), size, salt, index, What(g, "send-all", size, 0));
  }
  ++calls;
  ++g.steps;
}

void Suite(const Group& g, std::size_t size, bool reverse) {
  std::vector<int> roots = {0, g.n - 1, g.n / 2};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  std::vector<std::function<void()>> steps;
  for (int root : roots) {
    steps.emplace_back([&g, size, root] { Bcast(g, size, root); });
    steps.emplace_back([&g, size, root] { Gather(g, size, root); });
    steps.emplace_back([&g, size, root] { SendOne(g, size, root); });
  }
  steps.emplace_back([&g, size] { Alltoall(g, size); });
  steps.emplace_back([&g, size] { SendAll(g, size); });
  if (reverse) std::reverse(steps.begin(), steps.end());
  for (auto& step : steps) step();
}

// Buffers in the shared range go through the protocol (the transports do not fault pages in).
void SharedBuffers(const Group& g) {
  const std::size_t size = 4096;
  const auto n = static_cast<std::size_t>(g.n);
  const auto me = static_cast<std::size_t>(g.me);
  std::uint64_t salt = Salt(g, "shared", size, 0);
  auto* out = static_cast<std::uint8_t*>(lmdx_malloc(size * n));
  auto* in = static_cast<std::uint8_t*>(lmdx_malloc(size * n));
  Check(out != nullptr && in != nullptr, "lmdx_malloc");
  for (std::size_t j = 0; j < n; ++j) Fill(out + j * size, size, salt, me * n + j);
  Ok(lmdx_alltoall(g.handle, out, size, in), "lmdx_alltoall (shared buffers)");
  for (std::size_t i = 0; i < n; ++i) {
    Expect(in + i * size, size, salt, i * n + me, "alltoall into shared memory");
  }
  Fill(in, size, salt, g.me == 0 ? 7 : 8);
  Ok(lmdx_bcast(g.handle, 0, in, size), "lmdx_bcast (shared buffer)");
  Expect(in, size, salt, 7, "bcast into shared memory");
  lmdx_free(out);
  lmdx_free(in);
  calls += 2;
  g.steps += 2;
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (argc < 2) Die("usage: patterns MAX_BYTES");
  const std::size_t max = std::strtoull(argv[1], nullptr, 10);
  const int n = lmdx_size();
  const int rank = lmdx_rank();
  std::vector<int> all, reversed, evens, odds;
  for (int r = 0; r < n; ++r) {
    all.push_back(r);
    reversed.insert(reversed.begin(), r);
    (r % 2 == 0 ? evens : odds).push_back(r);
  }
  Group g_all = Make("all", all);
  Group g_reversed = Make("reversed", reversed);
  // Every rank names both halves; in the other half its index is -1.
  Group g_evens = Make("evens", evens);
  Group g_odds = Make("odds", odds);

  std::vector<std::size_t> sizes;
  for (std::size_t size :
       {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20}) {
    if (size <= max) sizes.push_back(size);
  }
  for (std::size_t size : sizes) {
    Suite(g_all, size, false);
    Suite(g_reversed, size, false);
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");

  // The halves at the same time, running their steps in opposite orders.
  const Group& half = rank % 2 == 0 ? g_evens : g_odds;
  for (std::size_t size : sizes) Suite(half, size, rank % 2 == 1);
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");

  SharedBuffers(g_reversed);
  std::printf("rank %d: patterns ok (%d calls)\n", rank, calls);
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}
