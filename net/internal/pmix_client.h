#ifndef LMDX_NET_INTERNAL_PMIX_CLIENT_H_
#define LMDX_NET_INTERNAL_PMIX_CLIENT_H_

#include <string>

namespace lmdx::net::internal {

// A connection to the PMIx server of the launcher that started this process (OpenMPI's mpirun,
// Slurm's srun --mpi=pmix, PRRTE): the job's rank, size and a key-value exchange among its
// processes.
class PmixClient {
 public:
  // True when the launcher gave this process a PMIx server to talk to.
  static bool Offered();
  // PMIx_Init; throws lmdx::Error (LMDX_ERR_BOOTSTRAP) naming what failed.
  PmixClient();
  ~PmixClient();  // PMIx_Finalize
  PmixClient(const PmixClient&) = delete;
  PmixClient& operator=(const PmixClient&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Whether every process of the job runs on this host (PMIX_LOCAL_SIZE == PMIX_JOB_SIZE).
  bool all_on_this_host() const { return local_size_ == size_; }
  const std::string& job_name() const { return job_name_; }  // the PMIx namespace

  // Makes key=value visible to every process of the job after the next Exchange.
  void Publish(const std::string& key, const std::string& value);
  // A barrier of every process of the job that also shares what each published.
  void Exchange();
  // What rank published under key before the last Exchange; throws if it published nothing.
  std::string Lookup(int rank, const std::string& key);

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  std::string job_name_;
};

}  // namespace lmdx::net::internal

#endif  // LMDX_NET_INTERNAL_PMIX_CLIENT_H_
