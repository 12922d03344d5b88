#include "net/transport_choice.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "config/config.h"

namespace lmdx::net {
namespace {

bool Known(const std::string& name) {
  return name == "any" || std::find(kNetworkPreference.begin(), kNetworkPreference.end(), name) !=
                              kNetworkPreference.end();
}

const wire::Endpoint* Find(const wire::NodeInfo& node, std::string_view transport) {
  for (const wire::Endpoint& endpoint : node.endpoints()) {
    if (endpoint.transport() == transport) return &endpoint;
  }
  return nullptr;
}

}  // namespace

TransportPolicy TransportPolicy::Parse(const std::string& job, const std::string& pairs) {
  TransportPolicy policy;
  if (!job.empty()) {
    if (!Known(job)) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "LMDX_TRANSPORT must be any, shm, fabric, tcp or udp, not \"" + job + "\"");
    }
    policy.job = job;
  }
  std::stringstream entries(pairs);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    if (entry.empty()) continue;
    int a = -1;
    int b = -1;
    char network[16] = {};
    int used = 0;
    if (std::sscanf(entry.c_str(), "%d-%d:%15[a-z]%n", &a, &b, network, &used) != 3 ||
        used != static_cast<int>(entry.size()) || a < 0 || b < 0 || a == b || !Known(network)) {
      throw Error(LMDX_ERR_INVALID_ARGUMENT,
                  "LMDX_TRANSPORT_PAIRS: \"" + entry +
                      "\" is not RANK-RANK:NETWORK (two different ranks; any, shm, fabric, tcp "
                      "or udp)");
    }
    policy.pairs[{std::min(a, b), std::max(a, b)}] = network;
  }
  return policy;
}

TransportPolicy TransportPolicy::FromEnvironment() {
  const char* job = std::getenv("LMDX_TRANSPORT");
  const char* pairs = std::getenv("LMDX_TRANSPORT_PAIRS");
  TransportPolicy from_variables = Parse(job != nullptr ? job : "", pairs != nullptr ? pairs : "");
  // The configuration's network block, then the variables over it: a variable names the network
  // for the whole job or for its pairs, and the file's choices stand where they say nothing.
  const config::Settings& settings = config::CurrentSettings();
  TransportPolicy policy;
  policy.job = job != nullptr && *job != '\0' ? from_variables.job : settings.transport;
  policy.pairs = settings.transport_pairs;
  for (const auto& [pair, network] : from_variables.pairs) policy.pairs[pair] = network;
  return policy;
}

const std::string& TransportPolicy::For(int a, int b) const {
  auto it = pairs.find({std::min(a, b), std::max(a, b)});
  return it != pairs.end() ? it->second : job;
}

std::vector<std::string> SharedNetworks(const wire::NodeInfo& a, const wire::NodeInfo& b) {
  std::vector<std::string> shared;
  for (std::string_view network : kNetworkPreference) {
    const wire::Endpoint* left = Find(a, network);
    const wire::Endpoint* right = Find(b, network);
    if (left == nullptr || right == nullptr || left->scope() != right->scope()) continue;
    shared.emplace_back(network);
  }
  return shared;
}

PairChoice ChooseNetwork(const wire::JobTable& table, int a, int b, const TransportPolicy& policy) {
  PairChoice choice;
  std::vector<std::string> shared = SharedNetworks(table.nodes(a), table.nodes(b));
  const std::string& asked = policy.For(a, b);
  if (asked != "any") {
    if (std::find(shared.begin(), shared.end(), asked) != shared.end()) {
      choice.network = asked;
      return choice;
    }
    choice.fell_back = asked;
  }
  if (!shared.empty()) choice.network = shared.front();
  return choice;
}

std::string TransportMatrix(const wire::JobTable& table, const TransportPolicy& policy) {
  int size = table.nodes_size();
  std::ostringstream out;
  out << "transports (row: rank, column: peer)\n";
  auto cell = [&out](const std::string& text) {
    out << std::string(text.size() < 7 ? 7 - text.size() : 1, ' ') << text;
  };
  out << "   rank";
  for (int b = 0; b < size; ++b) cell(std::to_string(b));
  out << '\n';
  for (int a = 0; a < size; ++a) {
    cell(std::to_string(a));
    for (int b = 0; b < size; ++b) {
      if (a == b) {
        cell("-");
        continue;
      }
      PairChoice choice = ChooseNetwork(table, a, b, policy);
      cell(choice.network.empty() ? "none" : choice.network);
    }
    out << '\n';
  }
  return out.str();
}

}  // namespace lmdx::net
