#ifndef LMDX_NET_UDP_INTERNAL_UDP_FAULTS_H_
#define LMDX_NET_UDP_INTERNAL_UDP_FAULTS_H_

#include <cstdint>
#include <random>
#include <string>

namespace lmdx::net::internal {

// Faults the udp transport injects into its own outgoing datagrams, to prove it survives a bad
// network: LMDX_UDP_FAULTS="loss=5,duplicate=1,reorder=2,seed=7" (percentages of datagrams;
// the seed makes a run repeatable). Off unless set. The injector sits just before sendmsg, so
// acknowledgements suffer as much as data, as they would on a real lossy link. splice=P refuses
// that share of the datagrams sent without a copy (net/udp/internal/udp_splice.h) once their bytes
// are in the pipe, as a full socket buffer would.
class UdpFaults {
 public:
  enum class Action { kSend, kDrop, kDuplicate, kHoldBack };

  // Throws lmdx::Error(LMDX_ERR_INVALID_ARGUMENT) naming the variable and the bad entry.
  static UdpFaults Parse(const std::string& text, std::uint64_t default_seed);
  static UdpFaults FromEnvironment(std::uint64_t default_seed);

  bool any() const { return loss_ > 0 || duplicate_ > 0 || reorder_ > 0 || splice_ > 0; }
  // What to do with the next datagram. kHoldBack: send it after the one that follows it.
  Action Next();
  // Whether the next datagram sent without a copy is refused.
  bool RefuseSplice();
  std::string Describe() const;

 private:
  double loss_ = 0;
  double duplicate_ = 0;
  double reorder_ = 0;
  double splice_ = 0;
  std::mt19937_64 random_;
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_UDP_INTERNAL_UDP_FAULTS_H_
