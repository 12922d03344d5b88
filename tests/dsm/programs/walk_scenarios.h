// Scenarios that walk large variables in address order: the faults on which the home-based
// protocols fetch the pages ahead of a walk, and the first touches after which a node maps the
// untouched pages ahead (docs/protocols.md, "Fetching ahead of a walk").
#ifndef LMDX_TESTS_DSM_PROGRAMS_WALK_SCENARIOS_H_
#define LMDX_TESTS_DSM_PROGRAMS_WALK_SCENARIOS_H_

namespace lmdx::litmus {

// Every node fills its own band (its home pages) of a variable of 128 pages a node, first touches
// included; after a barrier every node reads all of it forwards, then every fourth page backwards
// (a column walk), then writes the band of the node after it word by word, and after a barrier
// every node checks all of it. Each iteration changes every value.
void Walks(int iterations);

}  // namespace lmdx::litmus

#endif  // LMDX_TESTS_DSM_PROGRAMS_WALK_SCENARIOS_H_
