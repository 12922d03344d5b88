// Diffs: the bytes of a page that changed against its twin (the copy taken before the page's
// first write in an interval), as runs of changed bytes. Byte-exact: a run never includes a byte
// that did not change, so two nodes that wrote neighbouring bytes of one word between two
// synchronisations both keep their writes when each applies the other's diff (C11 allows such
// writes; a word-granular diff would silently undo one of them).
//
// Encoding (little-endian, what travels as a frame's raw payload): runs one after another, each
//   u32 offset, u32 length, `length` bytes
// in increasing offset order, with no two runs adjacent.
#ifndef LMDX_CONSISTENCY_DIFF_H_
#define LMDX_CONSISTENCY_DIFF_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace lmdx::consistency {

using Diff = std::vector<std::uint8_t>;

// Appends to `out` the runs where `page` differs from `twin` (both `bytes` long); returns the
// number of encoded bytes appended (0 when the page did not change).
std::size_t AppendDiff(const std::byte* twin, const std::byte* page, std::size_t bytes, Diff& out);

// Appends to `out` runs of `page` over every byte `marked` says (marked.size() == bytes), whatever
// the bytes hold: the result sets those bytes as page has them, even where another copy already
// agrees, which a diff against a twin would leave out. Returns the encoded bytes appended.
std::size_t AppendMarkedRuns(const std::byte* page, const std::vector<bool>& marked, Diff& out);

// Marks in `marked` (bytes long) every byte an encoded diff writes. Throws as ApplyDiff.
void MarkDiffBytes(std::span<const std::uint8_t> diff, std::vector<bool>& marked);

// Writes the runs of an encoded diff into `page` (and nothing else). Throws lmdx::Error when the
// encoding is malformed or reaches past `bytes` (a diff is checked before any byte is written).
void ApplyDiff(std::span<const std::uint8_t> diff, std::byte* page, std::size_t bytes);

// Calls use(offset, length, bytes) for each run of an encoded diff, in order, once the whole diff
// is checked as ApplyDiff checks it (throws lmdx::Error when it is malformed).
void ForEachDiffRun(std::span<const std::uint8_t> diff, std::size_t bytes,
                    const std::function<void(std::size_t offset, std::size_t length,
                                             const std::uint8_t* run)>& use);

// The number of bytes a diff changes (the sum of its run lengths), for statistics.
std::size_t ChangedBytes(std::span<const std::uint8_t> diff);

}  // namespace lmdx::consistency

#endif  // LMDX_CONSISTENCY_DIFF_H_
