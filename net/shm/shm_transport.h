#ifndef LMDX_NET_SHM_SHM_TRANSPORT_H_
#define LMDX_NET_SHM_SHM_TRANSPORT_H_

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/log.h"
#include "net/job_secret.h"
#include "net/progress_engine.h"
#include "net/transport.h"

namespace lmdx::net {
namespace internal {
class ShmConnection;
}

// The shared-memory transport, for nodes of one host (the role SCI segments played).
//
// Each node listens on an abstract Unix-domain socket. The first send to a peer connects to it,
// runs the job's handshake (net/handshake.h) and passes, with SCM_RIGHTS, a memfd segment of two
// single-producer single-consumer rings (one per direction; net/shm/internal/shm_ring.h) and four
// eventfds. Frames are copied into the ring by the sender and out of it, straight into a posted
// receive buffer when there is one, by the receiver. The socket stays open as the pair's
// lifeline: when it closes, the peer is gone.
//
// The segment exists only as a file descriptor (memfd_create), mode 0600, held by the two
// processes of the pair: it has no name anyone could open, and the kernel frees it when the last
// of the two ends, however it ends.
class ShmTransport : public Transport, private ProgressEngine::Poller {
 public:
  // Throws lmdx::Error when the host offers no shared memory (the node then goes without).
  ShmTransport(ProgressEngine& engine, TransportHost& host, const JobSecret& secret, int rank,
               int size, const std::string& job_id);
  ~ShmTransport() override;

  const char* name() const override { return "shm"; }
  wire::Endpoint LocalEndpoint() const override;
  void SetJobTable(const wire::JobTable& table) override;
  void Send(int dest, OutgoingMessage message, bool may_block) override;
  bool SendNow(int dest, OutgoingMessage& message) override;
  bool SendRawNow(const SmallRaw& raw) override;
  void Close() override;
  void DropPeer(int rank, const std::string& why) override;

  // Who can reach this node's shared memory: the same kernel (boot id) and network namespace
  // (the socket's name lives there).
  static std::string LocalScope();

  // One-sided access between processes of one host: the reader copies straight out of the
  // exposing process with process_vm_readv (a writer into it with process_vm_writev), one system
  // call and one copy, with no code of the exposing node running. Nothing is registered: the key
  // names the exposing process as it sees itself, and it is used only when it is the process at
  // the other end of the pair's authenticated socket, as the kernel names that one to this
  // process (so a peer in another pid namespace is never reached at a wrong pid: the two differ
  // and the pair goes without).
  std::optional<std::string> Expose(void* base, std::size_t size) override;
  bool Read(int dest, std::uint64_t remote_address, const std::string& key, void* local,
            std::size_t size, std::function<void(bool ok)> on_done) override;
  // process_vm_writev, up to IOV_MAX pieces a call, under the same check of the key.
  std::optional<bool> Write(int dest, const std::string& key,
                            std::span<const WritePiece> pieces) override;
  // Opens /proc/<pid>/fd/<file> of the process the key names, under the same check, when it is
  // a memfd at least size bytes long, and maps it shared.
  Mapping Map(int dest, const std::string& key, int file, std::size_t size) override;

 private:
  using ConnectionPtr = std::shared_ptr<internal::ShmConnection>;
  void AcceptLoop();
  // Checks who connected, then hands the setup to a thread of its own: a connection that stalls
  // in its handshake must not keep the next peer waiting.
  void Dispatch(Fd socket);
  // Takes socket over (moves it out) once the peer (process pid, this job's user) is accepted.
  void Accept(Fd& socket, pid_t pid);
  void Connect(const ConnectionPtr& connection, const std::string& address);
  ConnectionPtr MakeConnection(int peer, const std::string& label);
  void Track(const ConnectionPtr& connection);
  // Frames to dest go through connection from now on (send_to_ and send_now_to_); caller holds
  // mutex_.
  void SendThrough(int dest, const ConnectionPtr& connection);
  void OnClosed(const ConnectionPtr& connection, const std::string& why);
  // The process key names when it is dest's, the process at the other end of the pair's socket;
  // 0 otherwise.
  pid_t PeerProcess(int dest, const std::string& key);
  // A copy of polled_ that one kind of caller walks, and the version it was taken at.
  struct Walk {
    std::shared_ptr<const std::vector<ConnectionPtr>> connections;
    std::uint64_t version = 0;
  };
  // The connections walk's caller walks, as of the last change (see the definition).
  const std::vector<ConnectionPtr>& Walked(Walk& walk);

  // ProgressEngine::Poller.
  bool Poll() override;
  bool Arm() override;
  void Disarm() override;
  // Arming a ring stores to a line its writer reads on every frame, and a writer that finds it
  // armed signals an eventfd: between two small messages of a conversation those cost as much as
  // the rest of the message.
  Laziness ArmsLazily() const override { return Laziness::kAfterSmallReceives; }

  ProgressEngine& engine_;
  TransportHost& host_;
  JobSecret secret_;
  int rank_;
  int size_;
  std::string job_id_;
  std::string address_;  // the abstract socket's name, without the leading NUL
  std::uint64_t capacity_;
  Fd listener_;
  Fd stop_fd_;
  std::thread acceptor_;

  // Setups under way on their own threads (their sockets, so Close can cut them short). Beyond
  // the bound the acceptor waits for one to end: a burst of peers is served in turn, and
  // strangers that stall can hold at most this many setups for their deadline.
  static constexpr int kMaxSetupsAtOnce = 32;
  std::mutex setups_mutex_;
  std::condition_variable setups_changed_;
  std::set<int> setup_sockets_;
  int setups_running_ = 0;
  bool stopping_setups_ = false;
  LogLimiter refusals_{"refused shared-memory connections"};

  std::mutex mutex_;                    // guards everything below
  std::vector<std::string> addresses_;  // by rank
  std::vector<ConnectionPtr> send_to_;  // by rank; never emptied before the destructor
  // send_to_'s connections for SendNow, read without the lock (taking it and a reference was a
  // tenth of a shared-memory message's send); set with send_to_, never cleared.
  std::vector<std::atomic<internal::ShmConnection*>> send_now_to_;
  std::set<ConnectionPtr> connections_;
  // What pollers walk: replaced, never changed, so a poll copies one pointer under the mutex.
  std::shared_ptr<const std::vector<ConnectionPtr>> polled_;
  bool closing_ = false;
  std::atomic<std::uint64_t> polled_version_{0};  // bumped with each new polled_
  // The engine polls under its dispatch lock and arms or disarms under its pollers' lock, and a
  // poll may overlap an arming: each keeps its own copy, so neither frees the list the other walks.
  Walk polls_walk_;   // only Poll touches it
  Walk arming_walk_;  // only Arm and Disarm touch it
};

}  // namespace lmdx::net

#endif  // LMDX_NET_SHM_SHM_TRANSPORT_H_
