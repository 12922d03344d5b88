// The communication schedules of group collectives, as pure functions of group indices (see
// docs/groups.md). Every member computes the same schedule alone, so no message says who sends
// to whom.
#ifndef LMDX_GROUPS_TREE_H_
#define LMDX_GROUPS_TREE_H_

#include <algorithm>
#include <vector>

namespace lmdx::groups {

// Binomial tree over n members rooted at `root`. Members are renumbered relative to the root
// (relative = (index - root) mod n, the root is 0). The parent of relative r > 0 is r with its
// lowest set bit cleared; so the subtree of r is the contiguous range [r, r + lowbit(r)) cut at n,
// which lets a gather concatenate subtrees on the way up. The tree's depth is ceil(log2 n), and the
// root has ceil(log2 n) children.

constexpr int Relative(int index, int root, int n) { return (index - root + n) % n; }
constexpr int Absolute(int relative, int root, int n) { return (relative + root) % n; }

// The lowest set bit of relative; for the root, the smallest power of two not below n.
constexpr int Span(int relative, int n) {
  if (relative != 0) return relative & -relative;
  int span = 1;
  while (span < n) span <<= 1;
  return span;
}

constexpr int Parent(int relative) { return relative - (relative & -relative); }

// Members in the subtree of relative (itself included).
constexpr int SubtreeSize(int relative, int n) {
  int span = Span(relative, n);
  return span < n - relative ? span : n - relative;
}

// The children of relative, largest subtree first (they are sent to first: the deepest path
// starts earliest; when n is not a power of two a wider span may hold fewer members).
inline std::vector<int> Children(int relative, int n) {
  std::vector<int> children;
  for (int mask = Span(relative, n) >> 1; mask > 0; mask >>= 1) {
    if (relative + mask < n) children.push_back(relative + mask);
  }
  std::stable_sort(children.begin(), children.end(),
                   [n](int a, int b) { return SubtreeSize(a, n) > SubtreeSize(b, n); });
  return children;
}

// ceil(log2 n): the rounds of a tree collective, the root's fan-out.
constexpr int Rounds(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

// All-to-all by pairwise exchange, rounds 1 .. n-1: in each round every member sends one block
// and receives one. For n a power of two the partners of a round are index XOR round both ways;
// otherwise a member sends to (index + round) mod n and receives from (index - round) mod n.
constexpr bool PowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }
constexpr int SendPartner(int index, int round, int n) {
  return PowerOfTwo(n) ? (index ^ round) : (index + round) % n;
}
constexpr int ReceivePartner(int index, int round, int n) {
  return PowerOfTwo(n) ? (index ^ round) : (index - round % n + n) % n;
}

}  // namespace lmdx::groups

#endif  // LMDX_GROUPS_TREE_H_
