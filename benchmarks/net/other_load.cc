#include "benchmarks/net/other_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

namespace lmdx::bench {
namespace {

// Busy CPU seconds of the whole machine, from the first line of /proc/stat; -1 if unreadable.
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu") {
    return -1;
  }
  return static_cast<double>(user + nice + system + irq + softirq + steal) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

// This process and every descendant it has waited for (rusage accumulates through each wait).
double own_cpu_seconds() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) +
         seconds(children.ru_stime);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

OtherLoadMeter::OtherLoadMeter()
    : start_busy_s_(machine_busy_seconds()),
      start_children_s_(own_cpu_seconds()),
      start_wall_s_(wall_seconds()) {}

double OtherLoadMeter::cores_used_by_others() const {
  const double busy = machine_busy_seconds();
  const double wall = wall_seconds() - start_wall_s_;
  if (busy < 0 || start_busy_s_ < 0 || wall <= 0) return 0;
  const double others = (busy - start_busy_s_) - (own_cpu_seconds() - start_children_s_);
  return std::max(0.0, others / wall);
}

}  // namespace lmdx::bench
