#ifndef LMDX_CONFIG_CONFIG_H_
#define LMDX_CONFIG_CONFIG_H_

// LMDX's configuration: a protobuf text-format file (schema: config/config.proto) and LMDX_*
// environment variables that override it. docs/configuration.md describes every field.
//
// Every error throws lmdx::Error(LMDX_ERR_CONFIG). An error in a file names it the way compilers
// do, "FILE:LINE:COLUMN: FIELD: what is wrong" (line and column from 1); an error in a variable
// names the variable: "LMDX_PROTOCOL: ...".

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.pb.h"

namespace lmdx::config {

// The unit sizes and addresses are checked against: the x86-64 page.
inline constexpr std::uint64_t kPageBytes = 4096;
// The user half of the x86-64 48-bit address space ends here; the shared range must end at or
// below it.
inline constexpr std::uint64_t kUserSpaceEnd = 0x800000000000;
// The lowest base accepted: Linux's default vm.mmap_min_addr.
inline constexpr std::uint64_t kLowestBase = 0x10000;

inline constexpr std::uint64_t kDefaultDsmBytes = std::uint64_t{64} << 30;  // 64 GiB
inline constexpr std::uint64_t kDefaultDsmBase = 0x400000000000;
inline constexpr const char* kDefaultStatsJson = "lmdx-stats.json";

// Where the modules (their ranks) and links of a file are written ({line, column}, from 1, in the
// file's order), so that checks made later (against the job's size) can name the line.
struct SourceLines {
  std::vector<std::pair<int, int>> modules;
  std::vector<std::pair<int, int>> links;
};

// Parses a file's text (file_name is used in messages only) and checks what the schema cannot:
// sizes, the base address, region names, pairs, network names, modules and links. Unknown fields
// are errors. Fills *lines when given.
Config ParseConfigText(std::string_view text, std::string_view file_name,
                       SourceLines* lines = nullptr);
// Reads and parses a file. A file that cannot be read is an error naming it.
Config LoadConfigFile(const std::string& path, SourceLines* lines = nullptr);

// What a named shared variable gets: never PROTOCOL_DEFAULT or HOME_DEFAULT.
struct VariableSettings {
  Protocol protocol = SC;
  Home home = BLOCK;
  std::uint32_t unit_pages = 1;
};

// One dsm.region of the file, with dsm's protocol and home filled in where it names none.
struct RegionSettings {
  std::string name;  // as written: "grid", or a prefix with its '*' ("matrix_*")
  Protocol protocol = SC;
  Home home = BLOCK;
  std::uint32_t unit_pages = 1;
  bool protocol_given = false;  // the region names its own protocol (it then beats a module's)
  bool is_prefix() const { return !name.empty() && name.back() == '*'; }
};

// One module of the file (P-RIO): a named entry point run by a set of ranks.
struct ModuleSettings {
  std::string name;
  std::string ranks_text;  // as written: "1-3", "0,2,5-7"
  std::vector<int> ranks;  // the members' job ranks in index order: member i is ranks[i]
  bool shares_memory = false;
  // The default protocol of the variables the module creates: its own, else dsm.protocol (after
  // LMDX_PROTOCOL). Used only when shares_memory.
  Protocol protocol = SC;
  bool protocol_given = false;
  std::vector<std::string> ports;  // port names, as declared
  int line = 0;  // where its ranks are written (else the module), from 1 (0: not from a file)
  int column = 0;

  bool HasPort(std::string_view port) const;
  // The member index of a job rank, or -1.
  int IndexOf(int rank) const;
};

// A link from one module's port to a port of another module (or of the same one).
struct LinkSettings {
  std::string from_module;
  std::string from_port;
  std::string to_module;
  std::string to_port;
  int line = 0;  // from 1 (0: not from a file)
  int column = 0;
};

// The configuration in force: the file's values, defaults where it says nothing, then the
// environment's overrides. Enumerations never hold their *_DEFAULT value here.
struct Settings {
  std::string config_file;  // the file read ("" when LMDX_CONFIG was not set)

  // dsm
  std::uint64_t dsm_bytes = kDefaultDsmBytes;  // a multiple of kPageBytes
  std::uint64_t lrc_diff_limit = std::uint64_t{64} << 20;
  std::uintptr_t dsm_base = kDefaultDsmBase;  // page aligned; dsm_base + dsm_bytes <= 2^47
  // How page access is set (LMDX_DSM_ACCESS): "auto", "userfaultfd" or "mprotect".
  std::string dsm_access = "auto";
  // How home copies are reached where they may be (LMDX_DSM_ONE_SIDED): "auto" reads and writes
  // them straight in the home's memory where the pair's network allows, "off" always asks the home.
  std::string dsm_one_sided = "auto";
  // Faults on a strided walk fetch the pages ahead of it (LMDX_DSM_FETCH_AHEAD): "auto" or "off".
  std::string dsm_fetch_ahead = "auto";
  // An unused page before every variable (dsm.guard_pages, LMDX_DSM_GUARD=1).
  bool dsm_guard_pages = false;
  Protocol protocol = SC;               // for variables no region names
  Protocol heap_protocol = SC;          // the shared heap's: dsm.heap, else protocol
  Home home = BLOCK;                    // for variables no region names
  std::uint32_t unit_pages = 1;         // for variables no region names
  std::vector<RegionSettings> regions;  // in the file's order

  // stats
  bool stats_enabled = false;
  std::string stats_json = kDefaultStatsJson;  // where the JSON report goes when enabled

  // threads
  Placement placement = ROUND_ROBIN;

  // tasks
  Tasks::Scheduler task_scheduler = Tasks::STEAL;
  std::uint32_t task_runners = 1;

  // network, from the file only: net/transport_choice reads LMDX_TRANSPORT and
  // LMDX_TRANSPORT_PAIRS itself.
  std::string transport = "any";                               // any|shm|fabric|tcp|udp
  std::map<std::pair<int, int>, std::string> transport_pairs;  // (lower rank, higher rank)

  // modules and links, in the file's order (none: the program runs without modules)
  std::vector<ModuleSettings> modules;
  std::vector<LinkSettings> links;

  // The region that decides for a variable: the one with exactly its name, else the longest
  // prefix ("foo*") it starts with; nullptr when none matches.
  const RegionSettings* RegionFor(std::string_view variable) const;
  // The protocol and home of a variable: its region's, else dsm's.
  VariableSettings ForVariable(std::string_view variable) const;
  Protocol ProtocolFor(std::string_view variable) const { return ForVariable(variable).protocol; }
  Home HomeFor(std::string_view variable) const { return ForVariable(variable).home; }
  // The same for a variable a module creates whose protocol is creator_protocol
  // (PROTOCOL_DEFAULT: no module's): a region that names a protocol decides, else the module's
  // protocol, else as above. The home is the region's or dsm's.
  VariableSettings ForVariable(std::string_view variable, Protocol creator_protocol) const;

  // The module called name, or nullptr.
  const ModuleSettings* FindModule(std::string_view name) const;
  // The module a job rank runs, or nullptr.
  const ModuleSettings* ModuleOf(int rank) const;
  // The link from a module's port, or nullptr.
  const LinkSettings* LinkFrom(std::string_view module, std::string_view port) const;
  // Checks the modules against a job of job_size ranks: every rank a module names exists, and
  // every rank of the job is in a module (when any is declared). Throws
  // lmdx::Error(LMDX_ERR_CONFIG) naming the file, the module and the rank.
  void CheckModulesFit(int job_size) const;
  // The job size the modules imply: the highest rank any of them names, plus one; 0 without
  // modules.
  int ModuleJobSize() const;
};

// Variable name -> value. Only the names listed in kEnvironmentVariables are read; an empty value
// counts as unset.
using Environment = std::map<std::string, std::string, std::less<>>;

// The variables this layer reads.
inline constexpr std::array<std::string_view, 15> kEnvironmentVariables = {
    "LMDX_CONFIG",         "LMDX_DSM_SIZE",     "LMDX_DSM_BASE",      "LMDX_PROTOCOL",
    "LMDX_DSM_HOME",       "LMDX_STATS",        "LMDX_STATS_JSON",    "LMDX_PLACEMENT",
    "LMDX_LRC_DIFF_LIMIT", "LMDX_DSM_ACCESS",   "LMDX_DSM_ONE_SIDED", "LMDX_DSM_FETCH_AHEAD",
    "LMDX_TASK_SCHEDULER", "LMDX_TASK_RUNNERS", "LMDX_DSM_GUARD"};

// Those of kEnvironmentVariables the process has.
Environment ProcessEnvironment();

// Applies the defaults to a parsed file, then env's overrides (LMDX_CONFIG in env is not read
// here). config_file is recorded in Settings::config_file.
// lines (from ParseConfigText) gives the modules and links their lines.
Settings MakeSettings(const Config& config, const Environment& env,
                      const std::string& config_file = "", const SourceLines* lines = nullptr);
// Reads the file env names in LMDX_CONFIG (none: every default), then applies env.
Settings LoadSettings(const Environment& env);
// For tests: text stands for a file named file_name; env's LMDX_CONFIG is not read.
Settings SettingsFromText(std::string_view text, std::string_view file_name,
                          const Environment& env = {});

// The process's settings, from LMDX_CONFIG and the environment, loaded once on first use
// (thread-safe). Throws lmdx::Error on a bad file or variable; a later call tries again.
const Settings& CurrentSettings();

// Lower-case names as the environment variables spell them: "sc", "first_touch",
// "round_robin". "default" for the *_DEFAULT values.
std::string_view ProtocolName(Protocol protocol);
std::string_view HomeName(Home home);
std::string_view PlacementName(Placement placement);
std::string_view TaskSchedulerName(Tasks::Scheduler scheduler);

}  // namespace lmdx::config

#endif  // LMDX_CONFIG_CONFIG_H_
