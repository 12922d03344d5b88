// The offsets of the home-based protocols' message types from their instance's base.
#ifndef LMDX_CONSISTENCY_HOME_BASED_INTERNAL_MESSAGE_TYPES_H_
#define LMDX_CONSISTENCY_HOME_BASED_INTERNAL_MESSAGE_TYPES_H_

namespace lmdx::consistency::internal {

constexpr int kFetch = 0;       // to a home: pages wanted; the reply carries them
constexpr int kDiffs = 1;       // to a home: a release's diffs; the reply names copy holders
constexpr int kInvalidate = 2;  // rc, to a copy holder: drop these pages
constexpr int kUpdate = 3;      // update, to a copy holder: apply these diffs
constexpr int kHomeClaim = 4;   // to a first-touch page's manager: whose page is it (or mine)?
constexpr int kHomeUpdate = 5;  // lrc, one-way to a home: a fetched copy brought up to date
constexpr int kTypesPerProtocol = 6;

}  // namespace lmdx::consistency::internal

#endif  // LMDX_CONSISTENCY_HOME_BASED_INTERNAL_MESSAGE_TYPES_H_
