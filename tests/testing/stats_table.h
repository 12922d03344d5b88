// Reading the statistics tables `lmdx run --stats` prints, for tests that check what a protocol
// did.
#ifndef LMDX_TESTS_TESTING_STATS_TABLE_H_
#define LMDX_TESTS_TESTING_STATS_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace lmdx::testing {

// The values of one column ("prefetch") over the rows of every table that has it, one per rank.
std::vector<std::uint64_t> StatsColumn(const std::string& output, const std::string& column);
std::uint64_t StatsColumnSum(const std::string& output, const std::string& column);
std::uint64_t StatsColumnMax(const std::string& output, const std::string& column);
// The frames of one message type ("hlrc-fetch") every rank sent, from the table of messages by
// type; 0 when no rank sent any.
std::uint64_t StatsFramesSent(const std::string& output, const std::string& type);

}  // namespace lmdx::testing

#endif  // LMDX_TESTS_TESTING_STATS_TABLE_H_
