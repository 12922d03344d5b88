#include "net/internal/pmix_client.h"

#include <pmix.h>

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace lmdx::net::internal {
namespace {

[[noreturn]] void Fail(const std::string& what, pmix_status_t status) {
  throw Error(LMDX_ERR_BOOTSTRAP, "PMIx (the launcher's process manager interface): " + what +
                                      ": " + PMIx_Error_string(status));
}

pmix_proc_t ProcOf(const std::string& job_name, pmix_rank_t rank) {
  pmix_proc_t proc;
  PMIX_LOAD_PROCID(&proc, job_name.c_str(), rank);
  return proc;
}

// A value PMIx_Get returned, released however the caller leaves.
class GotValue {
 public:
  GotValue() = default;
  ~GotValue() {
    if (value_ != nullptr) PMIX_VALUE_RELEASE(value_);
  }
  GotValue(const GotValue&) = delete;
  GotValue& operator=(const GotValue&) = delete;
  pmix_value_t** out() { return &value_; }
  const pmix_value_t* operator->() const { return value_; }

 private:
  pmix_value_t* value_ = nullptr;
};

std::uint32_t JobNumber(const std::string& job_name, const char* key, const char* what) {
  pmix_proc_t wildcard = ProcOf(job_name, PMIX_RANK_WILDCARD);
  GotValue value;
  pmix_status_t status = PMIx_Get(&wildcard, key, nullptr, 0, value.out());
  if (status != PMIX_SUCCESS) Fail(std::string("cannot read ") + what, status);
  if (value->type != PMIX_UINT32) {
    throw Error(LMDX_ERR_BOOTSTRAP,
                std::string("PMIx gave the ") + what + " as type " + std::to_string(value->type));
  }
  return value->data.uint32;
}

}  // namespace

bool PmixClient::Offered() {
  return std::getenv("PMIX_NAMESPACE") != nullptr && std::getenv("PMIX_RANK") != nullptr;
}

PmixClient::PmixClient() {
  pmix_proc_t self;
  pmix_status_t status = PMIx_Init(&self, nullptr, 0);
  if (status != PMIX_SUCCESS) Fail("cannot reach the launcher's PMIx server", status);
  try {
    job_name_ = self.nspace;
    rank_ = static_cast<int>(self.rank);
    size_ = static_cast<int>(JobNumber(job_name_, PMIX_JOB_SIZE, "job size"));
    local_size_ = static_cast<int>(JobNumber(job_name_, PMIX_LOCAL_SIZE, "processes on this host"));
  } catch (...) {
    PMIx_Finalize(nullptr, 0);
    throw;
  }
}

PmixClient::~PmixClient() { PMIx_Finalize(nullptr, 0); }

void PmixClient::Publish(const std::string& key, const std::string& value) {
  pmix_value_t pmix_value;
  PMIX_VALUE_CONSTRUCT(&pmix_value);
  pmix_value.type = PMIX_STRING;
  // PMIx_Put copies the value; the string is only lent.
  pmix_value.data.string = const_cast<char*>(value.c_str());
  pmix_status_t status = PMIx_Put(PMIX_GLOBAL, key.c_str(), &pmix_value);
  if (status != PMIX_SUCCESS) Fail("cannot publish " + key, status);
  status = PMIx_Commit();
  if (status != PMIX_SUCCESS) Fail("cannot commit " + key, status);
}

void PmixClient::Exchange() {
  pmix_info_t collect;
  bool yes = true;
  PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  pmix_status_t status = PMIx_Fence(nullptr, 0, &collect, 1);
  PMIX_INFO_DESTRUCT(&collect);
  if (status != PMIX_SUCCESS) Fail("the job's processes could not meet (PMIx_Fence)", status);
}

std::string PmixClient::Lookup(int rank, const std::string& key) {
  pmix_proc_t proc = ProcOf(job_name_, static_cast<pmix_rank_t>(rank));
  GotValue value;
  pmix_status_t status = PMIx_Get(&proc, key.c_str(), nullptr, 0, value.out());
  if (status != PMIX_SUCCESS) {
    Fail("cannot read " + key + " of rank " + std::to_string(rank), status);
  }
  if (value->type != PMIX_STRING || value->data.string == nullptr) {
    throw Error(LMDX_ERR_BOOTSTRAP,
                "PMIx: " + key + " of rank " + std::to_string(rank) + " is not a string");
  }
  return value->data.string;
}

}  // namespace lmdx::net::internal

#if defined(__SANITIZE_ADDRESS__)
// libpmix keeps a few strings from PMIx_Init past PMIx_Finalize (5 bytes in Debian's 4.2.2).
// LeakSanitizer would report them at every exit of a process that mpirun started, and change its
// exit status; they are the library's, so they are not reported. Everything else still is.
extern "C" const char* __lsan_default_suppressions() { return "leak:libpmix.so\n"; }
#endif
