// The configuration's modules and links (config.proto's Module and Link): the schema, the checks
// with their file:line:column errors, the settings, and the checks against a job's size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "config/config.h"

namespace lmdx::config {
namespace {

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

const char* const kHybrid = R"(# two modules
module {
  name: "master"
  ranks: "0"
  shares_memory: false
  port: "work_out"
  port: "results_in"
}
module {
  name: "workers"
  ranks: "1-3"
  shares_memory: true
  protocol: SC
  port: "work_in"
  port: "results_out"
}
link { from: "master.work_out" to: "workers.work_in" }
link { from: "workers.results_out" to: "master.results_in" }
)";

// --- valid files -----------------------------------------------------------------------------

TEST(ModulesConfigTest, NoModulesByDefault) {
  Settings s = SettingsFromText("", "empty.conf");
  EXPECT_TRUE(s.modules.empty());
  EXPECT_TRUE(s.links.empty());
  EXPECT_EQ(s.ModuleOf(0), nullptr);
  EXPECT_NO_THROW(s.CheckModulesFit(16));
}

TEST(ModulesConfigTest, ModulesPortsAndLinks) {
  Settings s = SettingsFromText(kHybrid, "hybrid.conf");
  ASSERT_EQ(s.modules.size(), 2u);
  const ModuleSettings& master = s.modules[0];
  EXPECT_EQ(master.name, "master");
  EXPECT_EQ(master.ranks, (std::vector<int>{0}));
  EXPECT_FALSE(master.shares_memory);
  EXPECT_FALSE(master.protocol_given);
  EXPECT_EQ(master.ports, (std::vector<std::string>{"work_out", "results_in"}));
  EXPECT_EQ(master.line, 4);  // its ranks
  EXPECT_EQ(master.column, 3);
  const ModuleSettings& workers = s.modules[1];
  EXPECT_EQ(workers.ranks, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(workers.ranks_text, "1-3");
  EXPECT_TRUE(workers.shares_memory);
  EXPECT_TRUE(workers.protocol_given);
  EXPECT_EQ(workers.protocol, SC);
  EXPECT_EQ(workers.IndexOf(3), 2);
  EXPECT_EQ(workers.IndexOf(0), -1);
  EXPECT_TRUE(workers.HasPort("work_in"));
  EXPECT_FALSE(workers.HasPort("work_out"));

  EXPECT_EQ(s.ModuleOf(0), &s.modules[0]);
  EXPECT_EQ(s.ModuleOf(2), &s.modules[1]);
  EXPECT_EQ(s.ModuleOf(4), nullptr);
  EXPECT_EQ(s.FindModule("workers"), &s.modules[1]);
  EXPECT_EQ(s.FindModule("worker"), nullptr);

  ASSERT_EQ(s.links.size(), 2u);
  const LinkSettings* work = s.LinkFrom("master", "work_out");
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->to_module, "workers");
  EXPECT_EQ(work->to_port, "work_in");
  EXPECT_EQ(work->line, 17);
  EXPECT_EQ(s.LinkFrom("master", "results_in"), nullptr);  // it is only linked to
  EXPECT_EQ(s.LinkFrom("workers", "results_out")->to_port, "results_in");
  EXPECT_NO_THROW(s.CheckModulesFit(4));
}

TEST(ModulesConfigTest, RankListsKeepTheirOrder) {
  Settings s = SettingsFromText(R"(module { name: "a" ranks: "0,2,5-7" }
module { name: "b" ranks: " 4 , 1 , 3 " }
module { name: "c" ranks: "8-8" })",
                                "x.conf");
  EXPECT_EQ(s.modules[0].ranks, (std::vector<int>{0, 2, 5, 6, 7}));
  EXPECT_EQ(s.modules[1].ranks, (std::vector<int>{4, 1, 3}));  // index 0 is rank 4
  EXPECT_EQ(s.modules[2].ranks, (std::vector<int>{8}));
  EXPECT_EQ(s.modules[1].IndexOf(4), 0);
  EXPECT_NO_THROW(s.CheckModulesFit(9));
}

TEST(ModulesConfigTest, ModuleProtocolSitsBetweenRegionsAndTheDefault) {
  const std::string text = R"(dsm {
  protocol: SC
  region { name: "named" protocol: HLRC }
  region { name: "homed" home: CYCLIC }
}
module { name: "m" ranks: "0" shares_memory: true protocol: LRC }
module { name: "n" ranks: "1" shares_memory: true })";
  Settings s = SettingsFromText(text, "x.conf");
  EXPECT_EQ(s.modules[0].protocol, LRC);
  EXPECT_FALSE(s.modules[1].protocol_given);
  EXPECT_EQ(s.modules[1].protocol, SC);  // dsm.protocol
  // A region that names a protocol wins over the module's.
  EXPECT_EQ(s.ForVariable("named", LRC).protocol, HLRC);
  // A region that names only a home leaves the protocol to the module.
  EXPECT_EQ(s.ForVariable("homed", LRC).protocol, LRC);
  EXPECT_EQ(s.ForVariable("homed", LRC).home, CYCLIC);
  EXPECT_EQ(s.ForVariable("other", LRC).protocol, LRC);
  // No module's protocol: as before.
  EXPECT_EQ(s.ForVariable("other", PROTOCOL_DEFAULT).protocol, SC);
  EXPECT_EQ(s.ForVariable("homed", PROTOCOL_DEFAULT).protocol, SC);

  // LMDX_PROTOCOL changes the default of modules that name none.
  Settings overridden = SettingsFromText(text, "x.conf", {{"LMDX_PROTOCOL", "rc"}});
  EXPECT_EQ(overridden.modules[0].protocol, LRC);
  EXPECT_EQ(overridden.modules[1].protocol, RC);
}

// --- mistakes in the file --------------------------------------------------------------------

TEST(ModulesConfigTest, ModuleNamesAreCheckedAndUnique) {
  EXPECT_EQ(ParseError("module { ranks: \"0\" }"),
            "job.conf:1:1: module[0].name: a module needs a name");
  EXPECT_EQ(ParseError("module { name: \"a.b\" ranks: \"0\" }"),
            "job.conf:1:10: module[0].name: \"a.b\" is not a module name: use letters, digits, "
            "'_' and '-' only (found '.')");
  EXPECT_EQ(ParseError("module { name: \"w\" ranks: \"0\" }\nmodule { name: \"w\" ranks: \"1\" }"),
            "job.conf:2:10: module[1].name: the module \"w\" is declared twice (first at line 1)");
}

TEST(ModulesConfigTest, RanksMustBeWellFormed) {
  auto ranks_error = [](const std::string& ranks) {
    return ParseError("module { name: \"w\"\n  ranks: \"" + ranks + "\" }");
  };
  EXPECT_EQ(ParseError("module { name: \"w\" }"),
            "job.conf:1:1: module[0].ranks: a module needs ranks; write ranks and ranges "
            "separated by commas, like \"0\", \"1-3\" or \"0,2,5-7\"");
  EXPECT_EQ(ranks_error("1,,2"),
            "job.conf:2:3: module[0].ranks: \"1,,2\" has an empty item; write ranks and ranges "
            "separated by commas, like \"0\", \"1-3\" or \"0,2,5-7\"");
  EXPECT_EQ(ranks_error("one"),
            "job.conf:2:3: module[0].ranks: \"one\": \"one\" is not a rank or a range; write ranks "
            "and ranges separated by commas, like \"0\", \"1-3\" or \"0,2,5-7\"");
  EXPECT_EQ(ranks_error("-1"),
            "job.conf:2:3: module[0].ranks: \"-1\": \"-1\" is negative; ranks "
            "are 0 or more");
  EXPECT_EQ(ranks_error("3-1"),
            "job.conf:2:3: module[0].ranks: \"3-1\": the range \"3-1\" runs backwards; write "
            "\"1-3\"");
  EXPECT_EQ(ranks_error("1-3,2"), "job.conf:2:3: module[0].ranks: \"1-3,2\" lists rank 2 twice");
  EXPECT_EQ(ranks_error("1-"),
            "job.conf:2:3: module[0].ranks: \"1-\": \"1-\" is not a rank or a "
            "range; write ranks and ranges separated by commas, like \"0\", "
            "\"1-3\" or \"0,2,5-7\"");
  EXPECT_EQ(ranks_error("2000000"),
            "job.conf:2:3: module[0].ranks: \"2000000\": \"2000000\" is beyond the largest rank, "
            "1048575");
}

TEST(ModulesConfigTest, ARankRunsOneModule) {
  EXPECT_EQ(ParseError("module { name: \"a\" ranks: \"0-2\" }\n"
                       "module { name: \"b\" ranks: \"3,2\" }"),
            "job.conf:2:20: module[1].ranks: rank 2 is in module \"a\" (line 1) already; a rank "
            "runs one module");
}

TEST(ModulesConfigTest, ProtocolOnlyWithSharedMemory) {
  EXPECT_EQ(ParseError("module { name: \"m\" ranks: \"0\"\n  protocol: SC }"),
            "job.conf:2:3: module[0].protocol: the module \"m\" names a protocol but does not "
            "share memory; add shares_memory: true, or drop the protocol");
  EXPECT_EQ(ParseError("module { name: \"m\" ranks: \"0\" shares_memory: true protocol: TSO }"),
            "job.conf:1:61: unknown value \"TSO\" for protocol (SC, UPDATE, RC, LRC or HLRC)");
}

TEST(ModulesConfigTest, PortsAreUniquePerModule) {
  EXPECT_EQ(ParseError("module { name: \"m\" ranks: \"0\"\n  port: \"in\"\n  port: \"in\" }"),
            "job.conf:3:3: module[0].port[1]: the module \"m\" declares the port \"in\" twice");
  EXPECT_EQ(ParseError("module { name: \"m\" ranks: \"0\" port: \"\" }"),
            "job.conf:1:31: module[0].port[0]: a port needs a name");
  EXPECT_EQ(ParseError("module { name: \"m\" ranks: \"0\" port: \"in put\" }"),
            "job.conf:1:31: module[0].port[0]: \"in put\" is not a port name: use letters, "
            "digits, '_' and '-' only (found ' ')");
  // The same port name in two modules is fine.
  EXPECT_NO_THROW(ParseConfigText(
      "module { name: \"a\" ranks: \"0\" port: \"p\" } module { name: \"b\" ranks: \"1\" port: "
      "\"p\" }",
      "x"));
}

TEST(ModulesConfigTest, LinksNameExistingModulePorts) {
  const std::string modules =
      "module { name: \"m\" ranks: \"0\" port: \"out\" port: \"in\" }\n"
      "module { name: \"w\" ranks: \"1\" port: \"in\" }\n";
  auto link_error = [&](const std::string& link) { return ParseError(modules + link); };
  EXPECT_EQ(link_error("link { to: \"w.in\" }"),
            "job.conf:3:1: link[0].from: a link needs from: a module's port, \"module.port\"");
  EXPECT_EQ(link_error("link { from: \"m.out\" }"),
            "job.conf:3:1: link[0].to: a link needs to: a module's port, \"module.port\"");
  EXPECT_EQ(link_error("link { from: \"m_out\" to: \"w.in\" }"),
            "job.conf:3:8: link[0].from: \"m_out\" is not \"module.port\" (a module's name, a dot, "
            "one of its ports)");
  EXPECT_EQ(link_error("link { from: \"m.out\" to: \"x.in\" }"),
            "job.conf:3:22: link[0].to: no module is called \"x\" (modules: m, w)");
  EXPECT_EQ(link_error("link { from: \"m.out\" to: \"w.out\" }"),
            "job.conf:3:22: link[0].to: the module \"w\" has no port \"out\" (its ports: in)");
  EXPECT_EQ(
      link_error("link { from: \"m.out\" to: \"w.in\" }\nlink { from: \"m.out\" to: \"m.in\" }"),
      "job.conf:4:8: link[1].from: the port \"m.out\" is linked twice (first at line 3); a "
      "port sends over one link");
  // A module may link to itself, and one port may receive over several links.
  EXPECT_NO_THROW(ParseConfigText(modules + "link { from: \"m.out\" to: \"m.in\" }\n"
                                            "link { from: \"w.in\" to: \"m.in\" }",
                                  "x"));
  EXPECT_EQ(ParseError("link { from: \"m.out\" to: \"w.in\" }"),
            "job.conf:1:8: link[0].from: no module is called \"m\" (modules: none)");
}

TEST(ModulesConfigTest, UnknownFieldsNameTheKnownOnes) {
  EXPECT_EQ(ParseError("module { name: \"m\" rank: \"0\" }"),
            "job.conf:1:20: unknown field \"rank\" in module (known: name, ranks, shares_memory, "
            "protocol or port)");
  EXPECT_EQ(ParseError("link { source: \"m.out\" }"),
            "job.conf:1:8: unknown field \"source\" in link (known: from or to)");
}

// --- against the job -------------------------------------------------------------------------

TEST(ModulesConfigTest, EveryRankMustExistAndRunAModule) {
  Settings s = SettingsFromText(kHybrid, "hybrid.conf");
  EXPECT_EQ(ErrorOf([&] { s.CheckModulesFit(3); }),
            "hybrid.conf:11:3: module[1].ranks: rank 3 of module \"workers\" (ranks \"1-3\") is "
            "beyond the job's 3 ranks (0 to 2)");
  EXPECT_EQ(ErrorOf([&] { s.CheckModulesFit(1); }),
            "hybrid.conf:11:3: module[1].ranks: rank 1 of module \"workers\" (ranks \"1-3\") is "
            "beyond the job's 1 rank (rank 0)");
  EXPECT_EQ(ErrorOf([&] { s.CheckModulesFit(6); }),
            "hybrid.conf: rank 4 of the job's 6 ranks (0 to 5) is in no module; when modules are "
            "declared every rank runs one (modules: master 0, workers 1-3)");
  EXPECT_NO_THROW(s.CheckModulesFit(4));
}

TEST(ModulesConfigTest, SettingsWithoutAFileNameNoLine) {
  Config config = ParseConfigText("module { name: \"a\" ranks: \"1\" }", "x");
  Settings s = MakeSettings(config, {});
  EXPECT_EQ(ErrorOf([&] { s.CheckModulesFit(1); }),
            "module[0].ranks: rank 1 of module \"a\" (ranks \"1\") is beyond the job's 1 rank "
            "(rank 0)");
  EXPECT_EQ(ErrorOf([&] { s.CheckModulesFit(3); }),
            "rank 0 of the job's 3 ranks (0 to 2) is in no module; when modules are declared every "
            "rank runs one (modules: a 1)");
}

}  // namespace
}  // namespace lmdx::config
