/* samples/uts: an unbalanced tree search (after the UTS benchmark): a tree whose shape follows
 * from a seed, each node's number of children drawn from a geometric distribution of mean
 * --branching, down to --depth. Sibling subtrees differ in size by orders of magnitude, and no
 * node knows a subtree's size before searching it: the load can only be balanced while it runs.
 * Each tree node is a task that does --work rounds of hashing (its own weight), spawns one task
 * per child and waits for them.
 *
 * main checks the node count and the checksum of the work against a sequential search and prints
 * `verified`, or what differs and exits 1.
 *
 *   ./lmdx run uts -n 2 [-- --depth 9 --branching 4 --work 1000 --seed 19]
 */
#include <lmdx/lmdx.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "samples/common/sample_flags.h"

#define MAX_CHILDREN 64

struct tree_node {
  uint64_t state; /* the node's identity, from which its children and work follow */
  int depth;
  int max_depth;
  int branching;
  int work;
  long long nodes;   /* nodes of the subtree, filled in by the task */
  uint64_t checksum; /* of the work of the subtree */
};

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int children_of(const struct tree_node* node) {
  if (node->depth >= node->max_depth) return 0;
  /* Geometric on {0, 1, 2, ...} with mean b: P(k) = p (1 - p)^k, p = 1 / (1 + b). */
  double u = (double)(mix(node->state ^ 0x5bd1e995u) >> 11) * (1.0 / 9007199254740992.0);
  double p = 1.0 / (1.0 + node->branching);
  int k = (int)floor(log(1.0 - u) / log(1.0 - p));
  return k < MAX_CHILDREN ? k : MAX_CHILDREN;
}

static uint64_t weight(const struct tree_node* node) {
  uint64_t x = node->state;
  for (int round = 0; round < node->work; round++) x = mix(x);
  return x;
}

static struct tree_node child_of(const struct tree_node* node, int index) {
  struct tree_node child = {mix(node->state + (uint64_t)index + 1),
                            node->depth + 1,
                            node->max_depth,
                            node->branching,
                            node->work,
                            0,
                            0};
  return child;
}

static void search_sequentially(struct tree_node* node) {
  node->nodes = 1;
  node->checksum = weight(node);
  int children = children_of(node);
  for (int i = 0; i < children; i++) {
    struct tree_node child = child_of(node, i);
    search_sequentially(&child);
    node->nodes += child.nodes;
    node->checksum += child.checksum;
  }
}

static void search_task(void* arg) {
  struct tree_node* node = (struct tree_node*)arg;
  node->nodes = 1;
  node->checksum = weight(node);
  int children = children_of(node);
  struct tree_node child[MAX_CHILDREN];
  for (int i = 0; i < children; i++) {
    child[i] = child_of(node, i);
    lmdx_spawn(search_task, &child[i], sizeof child[i]);
  }
  lmdx_wait();
  for (int i = 0; i < children; i++) {
    node->nodes += child[i].nodes;
    node->checksum += child[i].checksum;
  }
}

int main(int argc, char** argv) {
  lmdx_init(&argc, &argv);
  int depth = 9;
  int branching = 4;
  int work = 1000;
  int seed = 19;
  int wrong_result = 0;
  struct sample_flag flags[] = {
      {"depth", &depth, 0, 40, "levels below the root"},
      {"branching", &branching, 1, 32, "mean number of children of a node"},
      {"work", &work, 0, 10000000, "hash rounds per node (its weight)"},
      {"seed", &seed, 0, 1000000000, "the tree's seed"},
  };
  int parsed = sample_parse_flags("uts", argc, argv, flags, 4, &wrong_result);
  if (parsed >= 0) return parsed;

  struct tree_node root = {mix((uint64_t)seed), 0, depth, branching, work, 0, 0};
  double start = sample_now();
  lmdx_spawn(search_task, &root, sizeof root);
  lmdx_wait();
  double seconds = sample_now() - start;
  if (wrong_result) root.nodes += 1;

  struct tree_node expected = {mix((uint64_t)seed), 0, depth, branching, work, 0, 0};
  double sequential_start = sample_now();
  search_sequentially(&expected);
  double sequential = sample_now() - sequential_start;
  printf(
      "uts: %lld nodes (depth %d, branching %d, work %d, seed %d) on %d nodes in %.3f s "
      "(one thread, no tasks: %.3f s)\n",
      root.nodes, depth, branching, work, seed, lmdx_size(), seconds, sequential);
  if (root.nodes != expected.nodes || root.checksum != expected.checksum) {
    printf("uts: %lld nodes with checksum %llx, expected %lld with %llx\n", root.nodes,
           (unsigned long long)root.checksum, expected.nodes,
           (unsigned long long)expected.checksum);
    return 1;
  }
  printf("verified\n");
  return 0;
}
