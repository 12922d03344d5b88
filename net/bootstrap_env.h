#ifndef LMDX_NET_BOOTSTRAP_ENV_H_
#define LMDX_NET_BOOTSTRAP_ENV_H_

// The environment a launcher gives each node process. The local launcher (`lmdx run`) sets all of
// them; cluster launchers set rank and size in their own variables (see net/bootstrap.h) and
// forward LMDX_JOB_SECRET and LMDX_RENDEZVOUS.
namespace lmdx::net::env {

inline constexpr char kRank[] = "LMDX_RANK";              // 0 .. size-1
inline constexpr char kSize[] = "LMDX_SIZE";              // number of nodes in the job
inline constexpr char kJobSecret[] = "LMDX_JOB_SECRET";   // 64 hex digits
inline constexpr char kRendezvous[] = "LMDX_RENDEZVOUS";  // host:port of the rendezvous server
inline constexpr char kJobId[] = "LMDX_JOB_ID";           // names the job's resources (16 hex)
// Optional: "1" makes a node log connection and bootstrap events on stderr.
inline constexpr char kDebug[] = "LMDX_DEBUG";

}  // namespace lmdx::net::env

#endif  // LMDX_NET_BOOTSTRAP_ENV_H_
