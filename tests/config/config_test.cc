#include "config/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"

namespace lmdx::config {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// The text of the lmdx::Error the call throws, after checking its code; "" (and a failure) when
// it throws nothing.
template <typename Call>
std::string ErrorOf(Call call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), LMDX_ERR_CONFIG) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string ParseError(const std::string& text) {
  return ErrorOf([&] { ParseConfigText(text, "job.conf"); });
}

std::string EnvError(const Environment& env, const std::string& text = "") {
  return ErrorOf([&] { SettingsFromText(text, "job.conf", env); });
}

// --- valid files and defaults --------------------------------------------------------------

TEST(ConfigTest, EmptyFileGivesEveryDefault) {
  Settings s = SettingsFromText("", "empty.conf");
  EXPECT_EQ(s.config_file, "empty.conf");
  EXPECT_EQ(s.dsm_bytes, 64 * kGiB);
  EXPECT_EQ(s.dsm_base, std::uintptr_t{0x400000000000});
  EXPECT_EQ(s.protocol, SC);
  EXPECT_EQ(s.home, BLOCK);
  EXPECT_TRUE(s.regions.empty());
  EXPECT_FALSE(s.stats_enabled);
  EXPECT_EQ(s.stats_json, "lmdx-stats.json");
  EXPECT_EQ(s.placement, ROUND_ROBIN);
  EXPECT_EQ(s.transport, "any");
  EXPECT_TRUE(s.transport_pairs.empty());
  EXPECT_EQ(s.ProtocolFor("anything"), SC);
  EXPECT_EQ(s.HomeFor("anything"), BLOCK);
}

TEST(ConfigTest, NoFileGivesTheSameDefaults) {
  Settings s = LoadSettings({});
  EXPECT_EQ(s.config_file, "");
  EXPECT_EQ(s.dsm_bytes, 64 * kGiB);
  EXPECT_EQ(s.dsm_base, std::uintptr_t{0x400000000000});
  EXPECT_EQ(s.protocol, SC);
  EXPECT_EQ(s.home, BLOCK);
  EXPECT_FALSE(s.stats_enabled);
  EXPECT_EQ(s.stats_json, "lmdx-stats.json");
  EXPECT_EQ(s.placement, ROUND_ROBIN);
  EXPECT_EQ(s.transport, "any");
  // Empty sections change nothing either.
  Settings empty_sections = SettingsFromText("dsm {} stats {} threads {} network {}", "e.conf");
  EXPECT_EQ(empty_sections.dsm_bytes, 64 * kGiB);
  EXPECT_EQ(empty_sections.protocol, SC);
  EXPECT_EQ(empty_sections.placement, ROUND_ROBIN);
  EXPECT_EQ(empty_sections.stats_json, "lmdx-stats.json");
}

TEST(ConfigTest, EveryFieldOfAFullFile) {
  const char* text = R"(# A whole configuration.
dsm {
  size: "16G"
  base: "0x500000000000"
  protocol: HLRC
  home: FIRST_TOUCH
  region { name: "grid" protocol: LRC home: CYCLIC }
  region { name: "tmp_*" protocol: UPDATE }
  region { name: "edge" home: BLOCK }
}
stats { enabled: true json: "/tmp/run.json" }
threads { placement: LEAST_LOADED }
network {
  transport: "tcp"
  pair { a: 1 b: 0 transport: "shm" }
  pair { a: 2 b: 3 transport: "any" }
}
)";
  Settings s = SettingsFromText(text, "full.conf");
  EXPECT_EQ(s.dsm_bytes, 16 * kGiB);
  EXPECT_EQ(s.dsm_base, std::uintptr_t{0x500000000000});
  EXPECT_EQ(s.protocol, HLRC);
  EXPECT_EQ(s.home, FIRST_TOUCH);
  ASSERT_EQ(s.regions.size(), 3u);
  EXPECT_EQ(s.regions[0].name, "grid");
  EXPECT_EQ(s.regions[0].protocol, LRC);
  EXPECT_EQ(s.regions[0].home, CYCLIC);
  EXPECT_FALSE(s.regions[0].is_prefix());
  EXPECT_EQ(s.regions[1].name, "tmp_*");
  EXPECT_TRUE(s.regions[1].is_prefix());
  EXPECT_EQ(s.regions[1].protocol, UPDATE);
  EXPECT_EQ(s.regions[1].home, FIRST_TOUCH);  // left out: dsm.home
  EXPECT_EQ(s.regions[2].protocol, HLRC);     // left out: dsm.protocol
  EXPECT_EQ(s.regions[2].home, BLOCK);
  EXPECT_TRUE(s.stats_enabled);
  EXPECT_EQ(s.stats_json, "/tmp/run.json");
  EXPECT_EQ(s.placement, LEAST_LOADED);
  EXPECT_EQ(s.transport, "tcp");
  std::map<std::pair<int, int>, std::string> pairs = {{{0, 1}, "shm"}, {{2, 3}, "any"}};
  EXPECT_EQ(s.transport_pairs, pairs);

  // The parsed message keeps what the file said, defaults not applied.
  Config config = ParseConfigText(text, "full.conf");
  EXPECT_EQ(config.dsm().size(), "16G");
  EXPECT_EQ(config.dsm().region(1).home(), HOME_DEFAULT);
  EXPECT_EQ(config.network().pair(0).a(), 1);
}

TEST(ConfigTest, StatsEnabledWithoutAPathWritesTheDefaultOne) {
  Settings s = SettingsFromText("stats { enabled: true }", "s.conf");
  EXPECT_TRUE(s.stats_enabled);
  EXPECT_EQ(s.stats_json, "lmdx-stats.json");
}

TEST(ConfigTest, Sizes) {
  auto bytes = [](const std::string& size) {
    return SettingsFromText("dsm { size: \"" + size + "\" }", "s.conf").dsm_bytes;
  };
  EXPECT_EQ(bytes("512M"), 512 * kMiB);
  EXPECT_EQ(bytes("512m"), 512 * kMiB);
  EXPECT_EQ(bytes("64G"), 64 * kGiB);
  EXPECT_EQ(bytes("1T"), kGiB * 1024);
  EXPECT_EQ(bytes("4K"), 4096u);
  EXPECT_EQ(bytes("8192"), 8192u);
  // The largest range that fits above the lowest base: the whole user half minus 64 KiB.
  EXPECT_EQ(SettingsFromText("dsm { size: \"131071G\" base: \"0x40000000\" }", "s.conf").dsm_bytes,
            131071 * kGiB);
}

TEST(ConfigTest, CommentsAndNumericEnumValuesAreText) {
  Settings s = SettingsFromText("dsm { protocol: 4  # LRC\n home: 2 }", "c.conf");
  EXPECT_EQ(s.protocol, LRC);
  EXPECT_EQ(s.home, CYCLIC);
}

// --- which region decides ------------------------------------------------------------------

TEST(ConfigTest, ExactNameBeatsTheLongestPrefix) {
  Settings s = SettingsFromText(R"(
dsm {
  protocol: RC
  region { name: "*" protocol: UPDATE }
  region { name: "grid*" protocol: LRC }
  region { name: "grid_big*" protocol: HLRC home: CYCLIC }
  region { name: "grid_big_one" protocol: SC }
}
)",
                                "p.conf");
  EXPECT_EQ(s.ProtocolFor("grid_big_one"), SC);    // exact, though three prefixes match
  EXPECT_EQ(s.HomeFor("grid_big_one"), BLOCK);     // the exact region's own (dsm.home)
  EXPECT_EQ(s.ProtocolFor("grid_big_two"), HLRC);  // longest prefix
  EXPECT_EQ(s.HomeFor("grid_big_two"), CYCLIC);
  EXPECT_EQ(s.ProtocolFor("grid_small"), LRC);  // "grid*"
  EXPECT_EQ(s.ProtocolFor("grid"), LRC);        // a prefix matches the bare stem too
  EXPECT_EQ(s.ProtocolFor("gri"), UPDATE);      // only "*"
  EXPECT_EQ(s.ProtocolFor(""), UPDATE);
  ASSERT_NE(s.RegionFor("grid_big_x"), nullptr);
  EXPECT_EQ(s.RegionFor("grid_big_x")->name, "grid_big*");
}

TEST(ConfigTest, WithoutARegionTheDsmDefaultsDecide) {
  Settings s = SettingsFromText(
      R"(dsm { protocol: LRC home: CYCLIC region { name: "a" protocol: SC } })", "p.conf");
  EXPECT_EQ(s.RegionFor("b"), nullptr);
  EXPECT_EQ(s.ProtocolFor("b"), LRC);
  EXPECT_EQ(s.HomeFor("b"), CYCLIC);
  EXPECT_EQ(s.ProtocolFor("a"), SC);
  EXPECT_EQ(s.HomeFor("a"), CYCLIC);
  EXPECT_EQ(s.ProtocolFor("ab"), LRC);  // "a" is an exact name, not a prefix
}

TEST(ConfigTest, TheHeapFollowsDsmHeapElseTheDefaultProtocol) {
  EXPECT_EQ(SettingsFromText("", "p.conf").heap_protocol, SC);
  EXPECT_EQ(SettingsFromText("dsm { protocol: HLRC }", "p.conf").heap_protocol, HLRC);
  EXPECT_EQ(SettingsFromText("dsm { protocol: HLRC heap: LRC }", "p.conf").heap_protocol, LRC);
  // The command line's default (LMDX_PROTOCOL) moves an unset heap, not one the file names.
  EXPECT_EQ(SettingsFromText("dsm { }", "p.conf", {{"LMDX_PROTOCOL", "rc"}}).heap_protocol, RC);
  Settings named = SettingsFromText("dsm { heap: UPDATE }", "p.conf", {{"LMDX_PROTOCOL", "rc"}});
  EXPECT_EQ(named.heap_protocol, UPDATE);
  EXPECT_EQ(named.protocol, RC);
  EXPECT_EQ(ParseError("dsm {\n  heap: 9\n}"),
            "job.conf:2:3: dsm.heap: 9 is not a protocol (SC, UPDATE, RC, LRC or HLRC)");
}

TEST(ConfigTest, CoherenceUnitsComeFromTheRegionElseTheDsm) {
  Settings s = SettingsFromText(
      R"(dsm { unit: 4 region { name: "big*" unit: 16 } region { name: "one" protocol: RC } })",
      "p.conf");
  EXPECT_EQ(s.ForVariable("big_grid").unit_pages, 16u);
  EXPECT_EQ(s.ForVariable("one").unit_pages, 4u);  // a region without a unit takes dsm.unit
  EXPECT_EQ(s.ForVariable("other").unit_pages, 4u);
  EXPECT_EQ(SettingsFromText("dsm { }", "p.conf").ForVariable("x").unit_pages, 1u);
}

TEST(ConfigTest, TheTaskRuntimeFromTheFileElseTheEnvironment) {
  Settings defaults = SettingsFromText("", "t.conf");
  EXPECT_EQ(defaults.task_scheduler, Tasks::STEAL);
  EXPECT_EQ(defaults.task_runners, 1u);
  Settings file = SettingsFromText("tasks { scheduler: LEAST_LOADED runners: 3 }", "t.conf");
  EXPECT_EQ(file.task_scheduler, Tasks::LEAST_LOADED);
  EXPECT_EQ(file.task_runners, 3u);
  Settings env = SettingsFromText("tasks { scheduler: SHARE runners: 3 }", "t.conf",
                                  {{"LMDX_TASK_SCHEDULER", "Steal"}, {"LMDX_TASK_RUNNERS", "2"}});
  EXPECT_EQ(env.task_scheduler, Tasks::STEAL);
  EXPECT_EQ(env.task_runners, 2u);
  EXPECT_EQ(ParseError("tasks {\n  runners: 65\n}"),
            "job.conf:2:3: tasks.runners: 65 is more than 64 runners per node");
  EXPECT_EQ(ParseError("tasks { scheduler: RANDOM }"),
            "job.conf:1:20: unknown value \"RANDOM\" for scheduler (STEAL, SHARE or LEAST_LOADED)");
  EXPECT_EQ(EnvError({{"LMDX_TASK_SCHEDULER", "fifo"}}),
            "LMDX_TASK_SCHEDULER: \"fifo\" is not a task scheduler (steal, share or least_loaded)");
  for (const char* bad : {"0", "-1", "two", "65", "2x"}) {
    EXPECT_EQ(
        EnvError({{"LMDX_TASK_RUNNERS", bad}}),
        std::string("LMDX_TASK_RUNNERS: \"") + bad + "\" is not a number of runners from 1 to 64");
  }
}

TEST(ConfigTest, TheLrcDiffLimitIsASize) {
  EXPECT_EQ(SettingsFromText("dsm { }", "p.conf").lrc_diff_limit, std::uint64_t{64} << 20);
  EXPECT_EQ(SettingsFromText("dsm { lrc_diff_limit: \"1M\" }", "p.conf").lrc_diff_limit,
            std::uint64_t{1} << 20);
  EXPECT_EQ(
      ParseError("dsm {\n  lrc_diff_limit: \"lots\"\n}"),
      "job.conf:2:3: dsm.lrc_diff_limit: \"lots\" is not a size; write a whole number of bytes "
      "with an optional K, M, G or T, like \"64G\"");
}

TEST(ConfigTest, ACoherenceUnitOutsideItsRangeIsNamed) {
  EXPECT_EQ(ParseError("dsm {\n  unit: 257\n}"),
            "job.conf:2:3: dsm.unit: a coherence unit holds 1 to 256 pages, not 257");
  EXPECT_EQ(ParseError("dsm { region { name: \"g\" unit: 1000 } }"),
            "job.conf:1:26: dsm.region[0].unit: a coherence unit holds 1 to 256 pages, not 1000");
  EXPECT_NO_THROW(ParseConfigText("dsm { unit: 256 region { name: \"g\" unit: 1 } }", "x"));
}

TEST(ConfigTest, OrderOfRegionsDoesNotMatter) {
  Settings s = SettingsFromText(
      R"(dsm { region { name: "x_long*" protocol: RC } region { name: "x*" protocol: LRC } })",
      "p.conf");
  EXPECT_EQ(s.ProtocolFor("x_long_name"), RC);
  EXPECT_EQ(s.ProtocolFor("x_short"), LRC);
}

// --- environment overrides ------------------------------------------------------------------

TEST(ConfigTest, EveryOverride) {
  const char* file = R"(
dsm { size: "1G" base: "0x500000000000" protocol: RC home: CYCLIC
      region { name: "own" protocol: SC home: BLOCK } region { name: "follows" } }
stats { enabled: false json: "file.json" }
threads { placement: ROUND_ROBIN }
)";
  Environment env = {{"LMDX_DSM_SIZE", "2G"},
                     {"LMDX_DSM_BASE", "0x300000000000"},
                     {"LMDX_PROTOCOL", "HLrc"},
                     {"LMDX_DSM_HOME", "first_touch"},
                     {"LMDX_STATS", "1"},
                     {"LMDX_STATS_JSON", "env.json"},
                     {"LMDX_PLACEMENT", "Least_Loaded"}};
  Settings s = SettingsFromText(file, "o.conf", env);
  EXPECT_EQ(s.dsm_bytes, 2 * kGiB);
  EXPECT_EQ(s.dsm_base, std::uintptr_t{0x300000000000});
  EXPECT_EQ(s.protocol, HLRC);
  EXPECT_EQ(s.home, FIRST_TOUCH);
  EXPECT_TRUE(s.stats_enabled);
  EXPECT_EQ(s.stats_json, "env.json");
  EXPECT_EQ(s.placement, LEAST_LOADED);
  // A region that names its own protocol and home keeps them; one that does not follows the
  // overridden defaults.
  EXPECT_EQ(s.ProtocolFor("own"), SC);
  EXPECT_EQ(s.HomeFor("own"), BLOCK);
  EXPECT_EQ(s.ProtocolFor("follows"), HLRC);
  EXPECT_EQ(s.HomeFor("follows"), FIRST_TOUCH);
}

TEST(ConfigTest, EachOverrideAlone) {
  EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_DSM_SIZE", "512M"}}).dsm_bytes, 512 * kMiB);
  EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_DSM_BASE", "0x7000000000"}}).dsm_base,
            std::uintptr_t{0x7000000000});
  for (auto [text, protocol] :
       {std::pair{"sc", SC}, std::pair{"update", UPDATE}, std::pair{"rc", RC},
        std::pair{"LRC", LRC}, std::pair{"hlrc", HLRC}}) {
    EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_PROTOCOL", text}}).protocol, protocol) << text;
  }
  for (auto [text, home] : {std::pair{"block", BLOCK}, std::pair{"Cyclic", CYCLIC},
                            std::pair{"FIRST_TOUCH", FIRST_TOUCH}}) {
    EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_DSM_HOME", text}}).home, home) << text;
  }
  EXPECT_TRUE(SettingsFromText("", "e", {{"LMDX_STATS", "1"}}).stats_enabled);
  EXPECT_FALSE(
      SettingsFromText("stats { enabled: true }", "e", {{"LMDX_STATS", "0"}}).stats_enabled);
  Settings json = SettingsFromText("", "e", {{"LMDX_STATS_JSON", "out/s.json"}});
  EXPECT_EQ(json.stats_json, "out/s.json");
  EXPECT_FALSE(json.stats_enabled);  // a path alone does not turn the report on
  EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_PLACEMENT", "round_robin"}}).placement, ROUND_ROBIN);
  EXPECT_EQ(SettingsFromText("threads { placement: ROUND_ROBIN }", "e",
                             {{"LMDX_PLACEMENT", "least_loaded"}})
                .placement,
            LEAST_LOADED);
}

TEST(ConfigTest, HowHomeCopiesAreReachedComesFromTheEnvironment) {
  EXPECT_EQ(SettingsFromText("", "e").dsm_one_sided, "auto");
  EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_DSM_ONE_SIDED", "Off"}}).dsm_one_sided, "off");
  EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_DSM_ONE_SIDED", "auto"}}).dsm_one_sided, "auto");
  EXPECT_EQ(EnvError({{"LMDX_DSM_ONE_SIDED", "rdma"}}),
            "LMDX_DSM_ONE_SIDED: \"rdma\" is not a way of reaching home copies (auto or off)");
}

TEST(ConfigTest, FetchingAheadComesFromTheEnvironment) {
  EXPECT_EQ(SettingsFromText("", "e").dsm_fetch_ahead, "auto");
  EXPECT_EQ(SettingsFromText("", "e", {{"LMDX_DSM_FETCH_AHEAD", "OFF"}}).dsm_fetch_ahead, "off");
  EXPECT_EQ(EnvError({{"LMDX_DSM_FETCH_AHEAD", "always"}}),
            "LMDX_DSM_FETCH_AHEAD: \"always\" is not a choice of fetching ahead of strided faults "
            "(auto or off)");
}

TEST(ConfigTest, GuardPagesComeFromTheFileOrTheEnvironment) {
  EXPECT_FALSE(SettingsFromText("", "e").dsm_guard_pages);
  EXPECT_TRUE(SettingsFromText("dsm { guard_pages: true }", "e").dsm_guard_pages);
  EXPECT_TRUE(SettingsFromText("", "e", {{"LMDX_DSM_GUARD", "1"}}).dsm_guard_pages);
  EXPECT_FALSE(SettingsFromText("dsm { guard_pages: true }", "e", {{"LMDX_DSM_GUARD", "0"}})
                   .dsm_guard_pages);
  EXPECT_EQ(EnvError({{"LMDX_DSM_GUARD", "yes"}}),
            "LMDX_DSM_GUARD: \"yes\" is not a choice of guard pages between variables (0 or 1)");
}

TEST(ConfigTest, LmdxHomeIsTheRepositoryNotAHomeDistribution) {
  // ./lmdx exports LMDX_HOME (the repository) to every process it starts.
  Settings s = LoadSettings({{"LMDX_HOME", "/work/lmdx"}});
  EXPECT_EQ(s.home, BLOCK);
}

TEST(ConfigTest, EmptyVariablesCountAsUnset) {
  Environment env;
  for (std::string_view name : kEnvironmentVariables) env.emplace(name, "");
  Settings s = SettingsFromText("dsm { protocol: LRC }", "e.conf", env);
  EXPECT_EQ(s.protocol, LRC);
  EXPECT_EQ(s.dsm_bytes, 64 * kGiB);
  EXPECT_EQ(LoadSettings(env).config_file, "");
}

TEST(ConfigTest, OverrideErrorsNameTheVariable) {
  EXPECT_EQ(EnvError({{"LMDX_DSM_SIZE", "64Q"}}),
            "LMDX_DSM_SIZE: \"64Q\" has an unknown unit \"Q\"; write a whole number of bytes with "
            "an optional K, M, G or T, like \"64G\"");
  EXPECT_EQ(EnvError({{"LMDX_DSM_SIZE", "0"}}),
            "LMDX_DSM_SIZE: \"0\" is zero; the shared range needs at least one page");
  EXPECT_EQ(EnvError({{"LMDX_DSM_SIZE", "-4G"}}),
            "LMDX_DSM_SIZE: \"-4G\" is negative; write a whole number of bytes with an optional "
            "K, M, G or T, like \"64G\"");
  EXPECT_EQ(EnvError({{"LMDX_DSM_BASE", "600000000000"}}),
            "LMDX_DSM_BASE: \"600000000000\" is not a hexadecimal address; write it in "
            "hexadecimal with 0x, like \"0x600000000000\"");
  EXPECT_EQ(EnvError({{"LMDX_DSM_BASE", "0x600000000001"}}),
            "LMDX_DSM_BASE: \"0x600000000001\" is not aligned to a 4 KiB page");
  EXPECT_EQ(EnvError({{"LMDX_DSM_BASE", "0x7fffff000000"}}),
            "LMDX_DSM_BASE: the shared range of 64 GiB from 0x7fffff000000 would end at "
            "0x800fff000000, past the user half of the x86-64 address space (0x800000000000)");
  EXPECT_EQ(EnvError({{"LMDX_DSM_SIZE", "100T"}}, "dsm { base: \"0x600000000000\" }"),
            "LMDX_DSM_SIZE: the shared range of 100 TiB from 0x600000000000 would end at "
            "0xc40000000000, past the user half of the x86-64 address space (0x800000000000)");
  EXPECT_EQ(EnvError({{"LMDX_DSM_SIZE", "100T"}, {"LMDX_DSM_BASE", "0x600000000000"}}),
            "LMDX_DSM_BASE and LMDX_DSM_SIZE: the shared range of 100 TiB from 0x600000000000 "
            "would end at 0xc40000000000, past the user half of the x86-64 address space "
            "(0x800000000000)");
  EXPECT_EQ(EnvError({{"LMDX_PROTOCOL", "tso"}}),
            "LMDX_PROTOCOL: \"tso\" is not a protocol (sc, update, rc, lrc or hlrc)");
  EXPECT_EQ(EnvError({{"LMDX_PROTOCOL", "protocol_default"}}),
            "LMDX_PROTOCOL: \"protocol_default\" is not a protocol (sc, update, rc, lrc or hlrc)");
  EXPECT_EQ(
      EnvError({{"LMDX_DSM_HOME", "first-touch"}}),
      "LMDX_DSM_HOME: \"first-touch\" is not a home distribution (block, cyclic or first_touch)");
  EXPECT_EQ(EnvError({{"LMDX_STATS", "yes"}}), "LMDX_STATS: \"yes\" is neither 0 (off) nor 1 (on)");
  EXPECT_EQ(EnvError({{"LMDX_PLACEMENT", "random"}}),
            "LMDX_PLACEMENT: \"random\" is not a placement (round_robin or least_loaded)");
}

// --- errors in the file: file, line, column and field ----------------------------------------

TEST(ConfigTest, SyntaxErrorsHaveLineAndColumn) {
  // The common mistakes in the user's terms, at the place to fix.
  EXPECT_EQ(ParseError("dsm {\n  size: \"1G\"\n"),
            "job.conf:1:5: missing '}' for 'dsm' opened at line 1");
  EXPECT_EQ(ParseError("dsm {\n  region { name: \"a\" }\n  region { name: \"b\"\n"),
            "job.conf:3:10: missing '}' for 'region' opened at line 3");
  EXPECT_EQ(ParseError("dsm { protocol: SC }\n}\n"),
            "job.conf:2:1: a '}' with no block open to close (one '}' too many?)");
  EXPECT_EQ(ParseError("dsm {\n  size: 1G\n}\n"),
            "job.conf:2:9: 'size' takes a quoted string such as \"1G\", not 1G");
  EXPECT_EQ(ParseError("dsm { protocol: \"hlrc\" }"),
            "job.conf:1:17: 'protocol' takes a name without quotes, such as HLRC, not \"hlrc\"");
  EXPECT_EQ(ParseError("dsm {\n  size \"1G\"\n}\n"),
            "job.conf:2:8: a ':' is missing between 'size' and its value \"1G\"");
  EXPECT_EQ(ParseError("dsm\n  size: \"1G\"\n}\n"),
            "job.conf:2:3: a '{' is missing after 'dsm' (a block such as dsm { ... } holds fields, "
            "not size)");
  EXPECT_EQ(ParseError("stats { enabled: maybe }"),
            "job.conf:1:18: Invalid value for boolean field \"enabled\". Value: \"maybe\".");
  EXPECT_EQ(ParseError("network { pair { a: 1.5 } }"), "job.conf:1:21: Expected integer, got: 1.5");
  EXPECT_EQ(ParseError("network { pair { a: 99999999999 } }"),
            "job.conf:1:21: Integer out of range (99999999999)");
  EXPECT_EQ(ParseError("dsm { size: 12 }"), "job.conf:1:13: Expected string, got: 12");
  EXPECT_EQ(ParseError("dsm {\n  region { name: \"unterminated }\n}"),
            "job.conf:2:33: String literals cannot cross line boundaries.");
}

TEST(ConfigTest, UnknownFieldsAreErrors) {
  EXPECT_EQ(ParseError("dsm {\n  sise: \"1G\"\n}"),
            "job.conf:2:3: unknown field \"sise\" in dsm (known: size, base, protocol, home, "
            "region, unit, lrc_diff_limit, heap or guard_pages)");
  EXPECT_EQ(ParseError("\n\n   statistics { enabled: true }"),
            "job.conf:3:4: unknown field \"statistics\" at the top level (known: dsm, stats, "
            "threads, network, module, link or tasks)");
  EXPECT_EQ(ParseError("dsm { region { name: \"a\" units: 4 } }"),
            "job.conf:1:26: unknown field \"units\" in dsm.region (known: name, protocol, home or "
            "unit)");
  // Columns count a tab as protobuf does: to the next multiple of 8, as compilers show them.
  EXPECT_EQ(ParseError("dsm\t{\tsise: \"1G\" }"),
            "job.conf:1:17: unknown field \"sise\" in dsm (known: size, base, protocol, home, "
            "region, unit, lrc_diff_limit, heap or guard_pages)");
  EXPECT_EQ(ParseError("network { pair { c: 1 } }"),
            "job.conf:1:18: unknown field \"c\" in network.pair (known: a, b or transport)");
}

TEST(ConfigTest, UnknownEnumValuesAreErrors) {
  EXPECT_EQ(ParseError("dsm {\n  protocol: TSO\n}"),
            "job.conf:2:13: unknown value \"TSO\" for protocol (SC, UPDATE, RC, LRC or HLRC)");
  EXPECT_EQ(ParseError("dsm { home: block }"),
            "job.conf:1:13: unknown value \"block\" for home (BLOCK, CYCLIC or FIRST_TOUCH)");
  EXPECT_EQ(ParseError("threads { placement: RANDOM }"),
            "job.conf:1:22: unknown value \"RANDOM\" for placement (ROUND_ROBIN or LEAST_LOADED)");
  EXPECT_EQ(ParseError("dsm { protocol: SC # the baseline\n home: # comment\n  round }"),
            "job.conf:3:3: unknown value \"round\" for home (BLOCK, CYCLIC or FIRST_TOUCH)");
  EXPECT_EQ(ParseError("dsm { protocol: 9 }"),
            "job.conf:1:7: dsm.protocol: 9 is not a protocol (SC, UPDATE, RC, LRC or HLRC)");
  EXPECT_EQ(ParseError("dsm { region { name: \"g\" home: 7 } }"),
            "job.conf:1:26: dsm.region[0].home: 7 is not a home distribution (BLOCK, CYCLIC or "
            "FIRST_TOUCH)");
  EXPECT_EQ(ParseError("threads { placement: 5 }"),
            "job.conf:1:11: threads.placement: 5 is not a placement (ROUND_ROBIN or "
            "LEAST_LOADED)");
}

TEST(ConfigTest, FieldGivenTwice) {
  EXPECT_EQ(ParseError("dsm { size: \"1G\" size: \"2G\" }"),
            "job.conf:1:18: Non-repeated field \"size\" is specified multiple times.");
  EXPECT_EQ(ParseError("dsm { protocol: SC\n protocol: RC }"),
            "job.conf:2:2: Non-repeated field \"protocol\" is specified multiple times.");
  EXPECT_EQ(ParseError("dsm { }\ndsm { }"),
            "job.conf:2:1: Non-repeated field \"dsm\" is specified multiple times.");
}

TEST(ConfigTest, BadSizes) {
  const std::string how =
      "write a whole number of bytes with an optional K, M, G or T, like \"64G\"";
  EXPECT_EQ(ParseError("dsm {\n  size: \"64Q\"\n}"),
            "job.conf:2:3: dsm.size: \"64Q\" has an unknown unit \"Q\"; " + how);
  EXPECT_EQ(ParseError("dsm { size: \"64GB\" }"),
            "job.conf:1:7: dsm.size: \"64GB\" has an unknown unit \"GB\"; " + how);
  EXPECT_EQ(ParseError("dsm { size: \"0\" }"),
            "job.conf:1:7: dsm.size: \"0\" is zero; the shared range needs at least one page");
  EXPECT_EQ(ParseError("dsm { size: \"0G\" }"),
            "job.conf:1:7: dsm.size: \"0G\" is zero; the shared range needs at least one page");
  EXPECT_EQ(ParseError("dsm { size: \"-1G\" }"),
            "job.conf:1:7: dsm.size: \"-1G\" is negative; " + how);
  EXPECT_EQ(ParseError("dsm { size: \"G\" }"),
            "job.conf:1:7: dsm.size: \"G\" is not a size; " + how);
  EXPECT_EQ(ParseError("dsm { size: \" 1G\" }"),
            "job.conf:1:7: dsm.size: \" 1G\" is not a size; " + how);
  EXPECT_EQ(ParseError("dsm { size: \"1000\" }"),
            "job.conf:1:7: dsm.size: \"1000\" is not a whole number of 4 KiB pages");
  EXPECT_EQ(ParseError("dsm { size: \"128T\" }"),
            "job.conf:1:7: dsm.size: \"128T\" is larger than the user half of the address space "
            "(128 TiB)");
  EXPECT_EQ(ParseError("dsm { size: \"99999999999999999999999\" }"),
            "job.conf:1:7: dsm.size: \"99999999999999999999999\" is larger than the user half of "
            "the address space (128 TiB)");
}

TEST(ConfigTest, BadBases) {
  EXPECT_EQ(ParseError("dsm {\n\n     base: \"600000000000\" }"),
            "job.conf:3:6: dsm.base: \"600000000000\" is not a hexadecimal address; write it in "
            "hexadecimal with 0x, like \"0x600000000000\"");
  EXPECT_EQ(ParseError("dsm { base: \"0x60000000000g\" }"),
            "job.conf:1:7: dsm.base: \"0x60000000000g\" is not a hexadecimal address; write it in "
            "hexadecimal with 0x, like \"0x600000000000\"");
  EXPECT_EQ(ParseError("dsm { base: \"0x\" }"),
            "job.conf:1:7: dsm.base: \"0x\" is not a hexadecimal address; write it in "
            "hexadecimal with 0x, like \"0x600000000000\"");
  EXPECT_EQ(ParseError("dsm { base: \"0x600000000800\" }"),
            "job.conf:1:7: dsm.base: \"0x600000000800\" is not aligned to a 4 KiB page");
  EXPECT_EQ(ParseError("dsm { base: \"0xffff800000000000\" }"),
            "job.conf:1:7: dsm.base: \"0xffff800000000000\" is not in the user half of the x86-64 "
            "address space (below 0x800000000000)");
  EXPECT_EQ(ParseError("dsm { base: \"0x800000000000\" }"),
            "job.conf:1:7: dsm.base: \"0x800000000000\" is not in the user half of the x86-64 "
            "address space (below 0x800000000000)");
  EXPECT_EQ(ParseError("dsm { base: \"0x0\" }"),
            "job.conf:1:7: dsm.base: \"0x0\" is below 0x10000, the lowest address Linux maps by "
            "default");
}

TEST(ConfigTest, RangePastTheUserHalf) {
  // The default size from a high base: the base is blamed, being the one given.
  EXPECT_EQ(ParseError("dsm {\n  base: \"0x7fff00000000\"\n}"),
            "job.conf:2:3: dsm.base: the shared range of 64 GiB from 0x7fff00000000 would end at "
            "0x800f00000000, past the user half of the x86-64 address space (0x800000000000)");
  // Both given: the size.
  EXPECT_EQ(ParseError("dsm {\n  base: \"0x400000000000\"\n  size: \"65T\"\n}"),
            "job.conf:3:3: dsm.size: the shared range of 65 TiB from 0x400000000000 would end at "
            "0x810000000000, past the user half of the x86-64 address space (0x800000000000)");
  // Ending exactly at the end of the user half is fine.
  EXPECT_NO_THROW(ParseConfigText("dsm { base: \"0x400000000000\" size: \"64T\" }", "x"));
}

TEST(ConfigTest, BadRegionNames) {
  EXPECT_EQ(ParseError("dsm {\n  region { name: \"grid\" }\n  region { protocol: SC }\n}"),
            "job.conf:3:3: dsm.region[1].name: a region needs a name: a shared variable's name, "
            "or a prefix ending in '*'");
  EXPECT_EQ(ParseError("dsm { region { protocol: SC name: \"\" } }"),
            "job.conf:1:29: dsm.region[0].name: a region needs a name: a shared variable's name, "
            "or a prefix ending in '*'");
  EXPECT_EQ(ParseError("dsm {\n  region { name: \"grid\" home: CYCLIC }\n  region { name: "
                       "\"edge\" }\n  region { name: \"grid\" protocol: LRC }\n}"),
            "job.conf:4:12: dsm.region[2].name: the region \"grid\" is named twice (first at line "
            "2)");
  EXPECT_EQ(ParseError("dsm { region { name: \"g*rid\" } }"),
            "job.conf:1:16: dsm.region[0].name: \"g*rid\": '*' may only end a name (a prefix, like "
            "\"grid_*\")");
  EXPECT_EQ(ParseError("dsm { region { name: \"grid \" } }"),
            "job.conf:1:16: dsm.region[0].name: \"grid \" has white space; a shared variable's "
            "name has none");
  // A name and the same name as a prefix are two regions.
  EXPECT_NO_THROW(ParseConfigText(R"(dsm { region { name: "a" } region { name: "a*" } })", "x"));
}

TEST(ConfigTest, BadNetworks) {
  EXPECT_EQ(ParseError("network {\n  transport: \"ib\"\n}"),
            "job.conf:2:3: network.transport: \"ib\" is not a network (any, shm, fabric, tcp or "
            "udp)");
  EXPECT_EQ(ParseError("network {\n  pair { a: 0 b: 1 transport: \"TCP\" }\n}"),
            "job.conf:2:20: network.pair[0].transport: \"TCP\" is not a network (any, shm, fabric, "
            "tcp or udp)");
  EXPECT_EQ(ParseError("network {\n  pair { a: 0 b: 1 }\n}"),
            "job.conf:2:3: network.pair[0].transport: a pair needs a network (any, shm, fabric, "
            "tcp or udp)");
  EXPECT_EQ(ParseError("network {\n  pair { a: 3 transport: \"tcp\" }\n}"),
            "job.conf:2:3: network.pair[0]: a pair needs both ranks, a and b");
  EXPECT_EQ(ParseError("network { pair { a: -1 b: 2 transport: \"tcp\" } }"),
            "job.conf:1:18: network.pair[0].a: -1 is not a rank (0 or more)");
  EXPECT_EQ(ParseError("network { pair { a: 2 b: 2 transport: \"tcp\" } }"),
            "job.conf:1:23: network.pair[0].b: a pair needs two different ranks, not 2 twice");
  EXPECT_EQ(ParseError("network {\n  pair { a: 0 b: 1 transport: \"tcp\" }\n"
                       "  pair { a: 1 b: 0 transport: \"shm\" }\n}"),
            "job.conf:3:3: network.pair[1]: the pair 0-1 is given twice (first at line 2)");
}

// --- files ----------------------------------------------------------------------------------

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "lmdx-config-test-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  fs::path dir_;
};

TEST_F(ConfigFileTest, LoadsTheFileLmdxConfigNames) {
  std::string path = Write("job.conf", "dsm { protocol: LRC }\nstats { enabled: true }\n");
  Settings s = LoadSettings({{"LMDX_CONFIG", path}, {"LMDX_DSM_HOME", "cyclic"}});
  EXPECT_EQ(s.config_file, path);
  EXPECT_EQ(s.protocol, LRC);
  EXPECT_EQ(s.home, CYCLIC);
  EXPECT_TRUE(s.stats_enabled);
  EXPECT_EQ(LoadConfigFile(path).dsm().protocol(), LRC);
}

TEST_F(ConfigFileTest, ErrorsNameThePath) {
  std::string path = Write("bad.conf", "# comment\ndsm {\n  size: \"64Q\"\n}\n");
  std::string expected = path +
                         ":3:3: dsm.size: \"64Q\" has an unknown unit \"Q\"; write a whole number "
                         "of bytes with an optional K, M, G or T, like \"64G\"";
  EXPECT_EQ(ErrorOf([&] { LoadConfigFile(path); }), expected);
  EXPECT_EQ(ErrorOf([&] { LoadSettings({{"LMDX_CONFIG", path}}); }), expected);
}

TEST_F(ConfigFileTest, MissingOrUnreadableFile) {
  std::string missing = (dir_ / "missing.conf").string();
  EXPECT_EQ(ErrorOf([&] { LoadConfigFile(missing); }),
            missing + ": cannot read the configuration file: No such file or directory");
  EXPECT_EQ(ErrorOf([&] {
              LoadSettings({{"LMDX_CONFIG", missing}});
            }),
            "LMDX_CONFIG: cannot read " + missing + ": No such file or directory");
  EXPECT_EQ(ErrorOf([&] { LoadConfigFile(dir_.string()); }),
            dir_.string() + ": cannot read the configuration file: Is a directory");
}

TEST(ConfigNamesTest, LowerCaseNames) {
  EXPECT_EQ(ProtocolName(SC), "sc");
  EXPECT_EQ(ProtocolName(HLRC), "hlrc");
  EXPECT_EQ(ProtocolName(PROTOCOL_DEFAULT), "default");
  EXPECT_EQ(HomeName(FIRST_TOUCH), "first_touch");
  EXPECT_EQ(PlacementName(LEAST_LOADED), "least_loaded");
  EXPECT_EQ(ProtocolName(static_cast<Protocol>(42)), "unknown");
}

}  // namespace
}  // namespace lmdx::config
