#ifndef LMDX_TOOLS_JOB_WATCH_H_
#define LMDX_TOOLS_JOB_WATCH_H_

namespace lmdx::tools {

// What the job's rendezvous knows of each node, so the launcher can tell an orderly exit (a node
// that announced its end) from a death (a node that joined and vanished).
class JobWatch {
 public:
  enum class NodeState { kNotJoined, kJoined, kLeft };
  virtual ~JobWatch() = default;
  // Called once the process of rank is gone.
  virtual NodeState StateAfterExit(int rank) = 0;
  // The process of rank is gone: nodes still waiting for it to join give up.
  virtual void NodeGone(int rank) = 0;
  // Whether rank has joined the job yet.
  virtual bool HasJoined(int rank) = 0;
};

}  // namespace lmdx::tools

#endif  // LMDX_TOOLS_JOB_WATCH_H_
