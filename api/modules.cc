// Modules (P-RIO): lmdx_module_*, lmdx_run_modules and lmdx_link_* over the configuration's
// module table (config::Settings::modules and ::links), and the rules the shared-memory calls
// apply for a rank's module (docs/configuration.md#modules, docs/messages.md).
#include "api/internal/modules.h"

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/internal/runtime_state.h"
#include "api/internal/unused_regions.h"

namespace lmdx::api {
namespace {

// Written once by lmdx_init (before the node starts), read-only afterwards.
struct ModuleState {
  const config::Settings* settings = nullptr;
  const config::ModuleSettings* self = nullptr;  // this rank's module, or null
  int rank = -1;
  int index = -1;  // this rank's index in self
  bool spmd = false;
  std::map<std::string, std::string, std::less<>> port_names;  // port -> "<module>.<port>"
  std::map<std::string, std::string, std::less<>> link_ports;  // port -> "<to module>.<port>"
};

ModuleState state;
std::atomic<const ModuleState*> started{nullptr};

int recorded_argc = 0;
char** recorded_argv = nullptr;
char* no_arguments[] = {nullptr};

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}

// "in hybrid.conf", or how the program got no file.
std::string InFile(const config::Settings& settings) {
  return settings.config_file.empty() ? "(no configuration file: LMDX_CONFIG is not set)"
                                      : "in " + settings.config_file;
}

std::string ModuleNames(const config::Settings& settings) {
  std::vector<std::string> names;
  names.reserve(settings.modules.size());
  for (const auto& module : settings.modules) names.push_back(module.name);
  return Joined(names);
}

const ModuleState& RequireStarted() {
  RequireNode("");
  const ModuleState* modules = started.load(std::memory_order_acquire);
  if (modules == nullptr) throw Error(LMDX_ERR_NOT_INITIALIZED, "the modules are not set up");
  return *modules;
}

// This rank's module; LMDX_ERR_CONFIG when the configuration declares none.
const config::ModuleSettings& RequireModule(const ModuleState& modules) {
  if (modules.self == nullptr) {
    throw Error(LMDX_ERR_CONFIG, "the configuration declares no modules " +
                                     InFile(*modules.settings) + "; see docs/configuration.md");
  }
  return *modules.self;
}

const config::ModuleSettings& RequireNamedModule(const ModuleState& modules, const char* name) {
  if (name == nullptr) return RequireModule(modules);
  if (modules.settings->modules.empty()) RequireModule(modules);
  const config::ModuleSettings* module = modules.settings->FindModule(name);
  if (module == nullptr) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "no module is called " + Quoted(name) + " (modules " +
                                               InFile(*modules.settings) + ": " +
                                               ModuleNames(*modules.settings) + ")");
  }
  return *module;
}

void CheckPortDeclared(const ModuleState& modules, const config::ModuleSettings& self,
                       const char* port) {
  if (port == nullptr) throw Error(LMDX_ERR_INVALID_ARGUMENT, "the port name is NULL");
  if (!self.HasPort(port)) {
    throw Error(LMDX_ERR_CONFIG, "the module " + Quoted(self.name) + " has no port " +
                                     Quoted(port) + " (its ports " + InFile(*modules.settings) +
                                     ": " + Joined(self.ports) + ")");
  }
}

// The link from this module's port; LMDX_ERR_CONFIG naming the port when there is none.
const config::LinkSettings& RequireLink(const ModuleState& modules, const char* port) {
  const config::ModuleSettings& self = RequireModule(modules);
  CheckPortDeclared(modules, self, port);
  const config::LinkSettings* link = modules.settings->LinkFrom(self.name, port);
  if (link != nullptr) return *link;
  std::vector<std::string> senders;
  for (const auto& other : modules.settings->links) {
    if (other.to_module == self.name && other.to_port == port) {
      senders.push_back(other.from_module + "." + other.from_port);
    }
  }
  std::string hint = senders.empty() ? ""
                                     : "; it receives from " + Joined(senders) +
                                           ": open it with lmdx::module_port";
  throw Error(LMDX_ERR_CONFIG, "the port " + Quoted(self.name + "." + port) +
                                   " is not linked to any module (no link { from: " +
                                   Quoted(self.name + "." + port) + " } " +
                                   InFile(*modules.settings) + ")" + hint);
}

const config::ModuleSettings& LinkedModule(const ModuleState& modules,
                                           const config::LinkSettings& link) {
  // The configuration's checks make sure the module exists.
  return *modules.settings->FindModule(link.to_module);
}

config::Protocol ProtocolNamed(std::string_view name) {
  for (int value = config::SC; value <= config::HLRC; ++value) {
    auto protocol = static_cast<config::Protocol>(value);
    if (config::ProtocolName(protocol) == name) return protocol;
  }
  return config::PROTOCOL_DEFAULT;
}

dsm::HomePolicy ToHomePolicy(config::Home home) {
  switch (home) {
    case config::CYCLIC: return dsm::HomePolicy::kCyclic;
    case config::FIRST_TOUCH: return dsm::HomePolicy::kFirstTouch;
    default: return dsm::HomePolicy::kBlock;
  }
}

// Runs body (returning a pointer) under Guard; nullptr on failure.
template <typename T, typename Body>
T* GuardPointer(const char* call, Body body) {
  T* result = nullptr;
  int status = Guard(call, [&] {
    result = body();
    return LMDX_OK;
  });
  return status == LMDX_OK ? result : nullptr;
}

}  // namespace

void RecordArguments(int* argc, char*** argv) {
  recorded_argc = argc != nullptr ? *argc : 0;
  recorded_argv = argv != nullptr ? *argv : nullptr;
}

void StartModules(const config::Settings& settings, int rank, int size, bool spmd) {
  settings.CheckModulesFit(size);
  state.settings = &settings;
  state.rank = rank;
  state.spmd = spmd;
  state.self = settings.ModuleOf(rank);
  if (state.self != nullptr) {
    state.index = state.self->IndexOf(rank);
    for (const std::string& port : state.self->ports) {
      state.port_names.emplace(port, state.self->name + "." + port);
      if (const config::LinkSettings* link = settings.LinkFrom(state.self->name, port)) {
        state.link_ports.emplace(port, link->to_module + "." + link->to_port);
      }
    }
  }
  started.store(&state, std::memory_order_release);
}

dsm::Creator ThisCreator() {
  const ModuleState* modules = started.load(std::memory_order_acquire);
  if (modules == nullptr || modules->self == nullptr || !modules->self->shares_memory ||
      !modules->self->protocol_given) {
    return {};
  }
  return {std::string(config::ProtocolName(modules->self->protocol)), modules->self->name};
}

dsm::RegionPolicy RegionPolicyFor(const config::Settings& settings, std::string_view name,
                                  const dsm::Creator& creator) {
  config::Protocol creator_protocol = ProtocolNamed(creator.protocol);
  config::VariableSettings chosen = settings.ForVariable(name, creator_protocol);
  dsm::RegionPolicy policy;
  policy.home = ToHomePolicy(chosen.home);
  policy.protocol = std::string(config::ProtocolName(chosen.protocol));
  policy.unit_pages = chosen.unit_pages;
  const config::RegionSettings* region = settings.RegionFor(name);
  NoteRegionTaken(region);
  if (region != nullptr && region->protocol_given) {
    policy.chosen_by = "set by dsm.region " + Quoted(region->name);
  } else if (creator_protocol != config::PROTOCOL_DEFAULT) {
    policy.chosen_by = "the protocol of module " + Quoted(creator.module);
  }
  return policy;
}

bool SharesMemory() {
  const ModuleState* modules = started.load(std::memory_order_acquire);
  return modules == nullptr || modules->self == nullptr || modules->self->shares_memory;
}

void RequireSharedMemory() {
  if (SharesMemory()) return;
  const ModuleState* modules = started.load(std::memory_order_acquire);
  throw Error(LMDX_ERR_MISUSE, "the module " + Quoted(modules->self->name) + " (rank " +
                                   std::to_string(modules->rank) +
                                   ") does not share memory: it talks by messages only "
                                   "(shares_memory: false " +
                                   InFile(*modules->settings) + ")");
}

void RequireHeapProtocol(const std::string& heap_protocol) {
  const ModuleState* modules = started.load(std::memory_order_acquire);
  if (modules == nullptr || modules->self == nullptr || !modules->self->protocol_given) return;
  std::string_view wanted = config::ProtocolName(modules->self->protocol);
  if (wanted == heap_protocol) return;
  throw Error(LMDX_ERR_CONFIG, "the module " + Quoted(modules->self->name) + " asks for protocol " +
                                   Quoted(wanted) + ", but the shared heap runs " +
                                   Quoted(heap_protocol) +
                                   " (dsm.heap, else dsm.protocol): lmdx_malloc memory follows "
                                   "the heap's protocol; set dsm.heap, or give the module's data a "
                                   "named variable or a dsm.region instead");
}

}  // namespace lmdx::api

using lmdx::api::Guard;

extern "C" {

const char* lmdx_module_name(void) {
  const lmdx::api::ModuleState* modules = lmdx::api::started.load(std::memory_order_acquire);
  if (lmdx::api::CurrentNode() == nullptr || modules == nullptr || modules->self == nullptr) {
    return nullptr;
  }
  return modules->self->name.c_str();
}

int lmdx_module_rank(void) {
  const lmdx::api::ModuleState* modules = lmdx::api::started.load(std::memory_order_acquire);
  if (lmdx::api::CurrentNode() == nullptr || modules == nullptr || modules->self == nullptr) {
    return -1;
  }
  return modules->index;
}

int lmdx_module_size(void) {
  const lmdx::api::ModuleState* modules = lmdx::api::started.load(std::memory_order_acquire);
  if (lmdx::api::CurrentNode() == nullptr || modules == nullptr || modules->self == nullptr) {
    return -1;
  }
  return static_cast<int>(modules->self->ranks.size());
}

int lmdx_module_member(const char* module, int index) {
  return Guard("lmdx_module_member", [&] {
    using namespace lmdx::api;
    const ModuleState& modules = RequireStarted();
    const lmdx::config::ModuleSettings& named = RequireNamedModule(modules, module);
    const int size = static_cast<int>(named.ranks.size());
    if (index < 0 || index >= size) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT,
                        "index " + std::to_string(index) + " is outside the module " +
                            Quoted(named.name) + " (" + std::to_string(size) + " members, 0 to " +
                            std::to_string(size - 1) + ")");
    }
    return named.ranks[static_cast<std::size_t>(index)];
  });
}

int lmdx_run_modules(const lmdx_module_entry* entries) {
  int (*entry)(int, char**) = nullptr;
  int checked = Guard("lmdx_run_modules", [&] {
    using namespace lmdx::api;
    const ModuleState& modules = RequireStarted();
    if (!modules.spmd) {
      throw lmdx::Error(LMDX_ERR_MISUSE,
                        "modules run on every rank, which needs lmdx_init_spmd: after lmdx_init "
                        "only rank 0 runs main");
    }
    const lmdx::config::ModuleSettings& self = RequireModule(modules);
    if (entries == nullptr) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT, "the table of entries is NULL");
    }
    std::map<std::string, int (*)(int, char**), std::less<>> table;
    for (int i = 0; entries[i].name != nullptr || entries[i].main != nullptr; ++i) {
      if (entries[i].name == nullptr) {
        throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT,
                          "entry " + std::to_string(i) + " has a main but no module name");
      }
      if (entries[i].main == nullptr) {
        throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT,
                          "the entry of module " + Quoted(entries[i].name) + " has no main");
      }
      if (!table.emplace(entries[i].name, entries[i].main).second) {
        throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT,
                          "the module " + Quoted(entries[i].name) + " has two entries");
      }
    }
    // Every module is checked on every rank, so all ranks fail alike rather than some waiting for
    // ranks that failed.
    for (const auto& module : modules.settings->modules) {
      if (table.count(module.name) != 0) continue;
      std::vector<std::string> given;
      given.reserve(table.size());
      for (const auto& [name, main] : table) given.push_back(name);
      throw lmdx::Error(LMDX_ERR_CONFIG,
                        "the module " + Quoted(module.name) + " (ranks " +
                            Quoted(module.ranks_text) + " " + InFile(*modules.settings) +
                            ") has no entry (entries given: " + Joined(given) + ")");
    }
    entry = table.find(self.name)->second;
    return LMDX_OK;
  });
  if (checked != LMDX_OK) return checked;
  char** argv =
      lmdx::api::recorded_argv != nullptr ? lmdx::api::recorded_argv : lmdx::api::no_arguments;
  int argc = lmdx::api::recorded_argv != nullptr ? lmdx::api::recorded_argc : 0;
  return entry(argc, argv);
}

const char* lmdx_module_port(const char* port) {
  return lmdx::api::GuardPointer<const char>("lmdx_module_port", [&] {
    using namespace lmdx::api;
    const ModuleState& modules = RequireStarted();
    CheckPortDeclared(modules, RequireModule(modules), port);
    return modules.port_names.find(port)->second.c_str();
  });
}

const char* lmdx_link_port(const char* port) {
  return lmdx::api::GuardPointer<const char>("lmdx_link_port", [&] {
    using namespace lmdx::api;
    const ModuleState& modules = RequireStarted();
    RequireLink(modules, port);
    return modules.link_ports.find(port)->second.c_str();
  });
}

int lmdx_link_size(const char* port) {
  return Guard("lmdx_link_size", [&] {
    using namespace lmdx::api;
    const ModuleState& modules = RequireStarted();
    return static_cast<int>(LinkedModule(modules, RequireLink(modules, port)).ranks.size());
  });
}

int lmdx_link_member(const char* port, int index) {
  return Guard("lmdx_link_member", [&] {
    using namespace lmdx::api;
    const ModuleState& modules = RequireStarted();
    const lmdx::config::LinkSettings& link = RequireLink(modules, port);
    const lmdx::config::ModuleSettings& to = LinkedModule(modules, link);
    const int size = static_cast<int>(to.ranks.size());
    if (index < 0 || index >= size) {
      throw lmdx::Error(LMDX_ERR_INVALID_ARGUMENT,
                        "index " + std::to_string(index) + " is outside the module " +
                            Quoted(to.name) + " (" + std::to_string(size) + " members, 0 to " +
                            std::to_string(size - 1) + "), linked from " +
                            Quoted(link.from_module + "." + link.from_port));
    }
    return to.ranks[static_cast<std::size_t>(index)];
  });
}

}  // extern "C"
