// One-sided reads of home copies (consistency::PageMemory::ReadHomeCopies): a node reads pages of
// another node's system view straight from that node's memory, over the pair's network where it
// has remote memory access (fabric; net/transport.h), so that serving the read costs the home no
// CPU, even while it computes.
//
// The first read from a home asks it for its key (kDsmReadKey); the home then exposes its whole
// system view to the pair's network, once per network. The answer is kept: a pair whose network
// has no remote reads is asked once and goes on with messages.
#ifndef LMDX_DSM_HOME_READS_H_
#define LMDX_DSM_HOME_READS_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "consistency/protocol.h"
#include "dsm/global_space.h"
#include "net/node.h"

namespace lmdx::dsm {

class HomeReads {
 public:
  // enabled false: Read always answers false (LMDX_DSM_READS=messages).
  HomeReads(net::Node& node, const GlobalSpace& space, bool enabled);

  // Installs the kDsmReadKey handler; called before the node joins the job.
  void RegisterHandlers();

  // Reads the home's copy of pages (sorted) into into, one page after another; blocks until
  // done. False when the pair cannot read one-sidedly or a read failed: the caller asks the home.
  bool Read(int home, std::span<const consistency::PageId> pages, std::byte* into);

 private:
  // How this node reads a home's memory, once the home has answered.
  struct Window {
    bool asked = false;
    std::string key;  // empty: no remote reads with this home
    std::uint64_t base = 0;
    std::uint64_t bytes = 0;
  };
  std::optional<Window> WindowOf(int home);

  net::Node& node_;
  const GlobalSpace& space_;
  bool enabled_;
  std::mutex mutex_;
  std::vector<Window> windows_;  // by rank
};

}  // namespace lmdx::dsm

#endif  // LMDX_DSM_HOME_READS_H_
