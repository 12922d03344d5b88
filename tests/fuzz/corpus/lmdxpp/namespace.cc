// C++: shared variables inside namespaces, qualified uses, using-declarations, and names in
// other namespaces that only look alike.
#include <algorithm>
#include <vector>

namespace sim {
namespace grid_data {
LMDX_shared double cells[8][8];
}  // namespace grid_data

LMDX_shared long count;

long Total() { return count + static_cast<long>(grid_data::cells[0][0]); }
}  // namespace sim

using sim::grid_data::cells;

extern "C" {
LMDX_shared int flags[4];
}

LMDX_thread step(void *arg) {
  std::vector<int> v{1, 2, 2};
  sim::count += std::count(v.begin(), v.end(), 2);  // std::count is not sim::count
  cells[1][1] = ::flags[0];
  auto first = [](int i) { return cells[0][i]; };
  return first(0) > 0 ? arg : nullptr;
}

int main() { return sim::Total() == 0 ? 0 : 1; }
