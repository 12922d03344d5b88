// CurrentSettings reads the process's own environment: the BUILD file sets LMDX_CONFIG to
// testdata/job.conf and LMDX_PROTOCOL=lrc for this test.

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "config/config.h"

namespace lmdx::config {
namespace {

TEST(CurrentSettingsTest, ReadsLmdxConfigAndTheOverrides) {
  const Settings& s = CurrentSettings();
  EXPECT_EQ(s.config_file, std::getenv("LMDX_CONFIG"));
  EXPECT_EQ(s.dsm_bytes, std::uint64_t{2} << 30);
  EXPECT_EQ(s.protocol, LRC);  // the file says RC; LMDX_PROTOCOL=lrc wins
  EXPECT_EQ(s.ProtocolFor("grid"), LRC);
  EXPECT_EQ(s.HomeFor("grid"), CYCLIC);
  EXPECT_TRUE(s.stats_enabled);
  EXPECT_EQ(ProcessEnvironment().at("LMDX_PROTOCOL"), "lrc");
}

TEST(CurrentSettingsTest, LoadedOnceForEveryThread) {
  constexpr int kThreads = 8;
  std::vector<const Settings*> seen(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &CurrentSettings(); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<const Settings*>(seen.begin(), seen.end()).size(), 1u);
  EXPECT_EQ(seen[0], &CurrentSettings());
}

}  // namespace
}  // namespace lmdx::config
