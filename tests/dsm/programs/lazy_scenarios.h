// Scenarios written as a new user would write them, each of which once read a stale value under
// the lazy protocols (docs/protocols.md, "What the model checks"). Both need 3 nodes or more.
#ifndef LMDX_TESTS_DSM_PROGRAMS_LAZY_SCENARIOS_H_
#define LMDX_TESTS_DSM_PROGRAMS_LAZY_SCENARIOS_H_

namespace lmdx::litmus {

// A home writes a word under a lock, another node overwrites it, a third reads it, and the home
// writes its first value back with no release in between: the third node must read it again.
void HomeWritesBack(int iterations);

// A node holds a lock across lmdx_barrier_all and unlocks it as soon as it leaves the barrier; a
// second LMDX thread of another node waits for the lock and must see what a third node wrote
// before the barrier, even when its own node has not yet taken in the barrier's departure.
void NoticesAcrossABarrier(int iterations);

// A home writes a word, another node copies the page (reading another word of it) while the home
// has written it, and the home writes back the word's first value before its release: the other
// node, after an acquire, must read that value. On 3 nodes or more the reader's first copy of a
// page is taken so too, while a third node holds one.
void HomeServedWhileWriting(int iterations);

}  // namespace lmdx::litmus

#endif  // LMDX_TESTS_DSM_PROGRAMS_LAZY_SCENARIOS_H_
