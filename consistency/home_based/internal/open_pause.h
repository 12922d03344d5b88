// A fault to inject for tests: LMDX_DSM_FAULTS="open-pause=MS" makes the opening of fresh pages at
// their home (HomeBasedProtocol::OpenFreshPages) pause for MS milliseconds while the pages are
// open for writing and not yet released to faults and fetches, so that a test can put another
// thread's write and another node's fetch into that window on purpose. Off unless set.
#ifndef LMDX_CONSISTENCY_HOME_BASED_INTERNAL_OPEN_PAUSE_H_
#define LMDX_CONSISTENCY_HOME_BASED_INTERNAL_OPEN_PAUSE_H_

#include <chrono>
#include <string>

namespace lmdx::consistency::internal {

// Throws lmdx::Error(LMDX_ERR_INVALID_ARGUMENT) naming the variable and the bad entry.
std::chrono::milliseconds ParseOpenPause(const std::string& text);
std::chrono::milliseconds OpenPauseFromEnvironment();

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_OPEN_PAUSE_H_
