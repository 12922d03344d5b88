#ifndef LMDX_NET_TRANSPORT_CHOICE_H_
#define LMDX_NET_TRANSPORT_CHOICE_H_

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/wire.pb.h"

namespace lmdx::net {

// Every network LMDX knows, best first. A pair of nodes uses the first one both have; fabric and
// udp take their places here when they exist.
inline constexpr std::array<std::string_view, 4> kNetworkPreference = {"shm", "fabric", "tcp",
                                                                       "udp"};

// What the user forces. LMDX_TRANSPORT=tcp|shm|fabric|udp|any for the whole job, and
// LMDX_TRANSPORT_PAIRS="0-1:tcp,2-3:shm" per pair (either order; a pair entry wins), or the same
// in the configuration's network block (network { transport: "tcp" pair { a: 0 b: 1 ... } }),
// which the variables override.
struct TransportPolicy {
  std::string job = "any";
  std::map<std::pair<int, int>, std::string> pairs;  // (lower rank, higher rank)

  // Throws lmdx::Error(LMDX_ERR_INVALID_ARGUMENT) naming the variable and the bad text.
  static TransportPolicy Parse(const std::string& job, const std::string& pairs);
  // The configuration's network block with the variables over it.
  static TransportPolicy FromEnvironment();
  // What is asked for the pair: "any" or a network name.
  const std::string& For(int a, int b) const;
};

// The networks two nodes share, best first.
std::vector<std::string> SharedNetworks(const wire::NodeInfo& a, const wire::NodeInfo& b);

struct PairChoice {
  std::string network;    // empty when the pair shares none
  std::string fell_back;  // the forced network the pair does not share, if any
};
// The same answer on both nodes of the pair and in every process that has the table: it depends
// only on the table and the policy.
PairChoice ChooseNetwork(const wire::JobTable& table, int a, int b, const TransportPolicy& policy);

// The matrix `lmdx run --show-transports` prints: one row per rank, the network to each rank.
std::string TransportMatrix(const wire::JobTable& table, const TransportPolicy& policy);

}  // namespace lmdx::net

#endif  // LMDX_NET_TRANSPORT_CHOICE_H_
