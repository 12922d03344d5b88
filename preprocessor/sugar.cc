#include "preprocessor/sugar.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

namespace lmdx::pp {
namespace {

using Kind = Sugar::Kind;

constexpr std::array<Sugar, 14> kSugar = {{
    {"LMDX_barrier_init", "lmdx_barrier_init", Kind::kNamed, 2, 2,
     "LMDX_barrier_init(name, count)"},
    {"LMDX_barrier", "lmdx_barrier", Kind::kNamed, 1, 1, "LMDX_barrier(name)"},
    {"LMDX_sema_init", "lmdx_sema_init", Kind::kNamed, 2, 2, "LMDX_sema_init(name, value)"},
    {"LMDX_sema_P", "lmdx_sema_p", Kind::kNamed, 1, 1, "LMDX_sema_P(name)"},
    {"LMDX_sema_V", "lmdx_sema_v", Kind::kNamed, 1, 1, "LMDX_sema_V(name)"},
    {"LMDX_lock", "lmdx_lock", Kind::kNamed, 1, 1, "LMDX_lock(name)"},
    {"LMDX_unlock", "lmdx_unlock", Kind::kNamed, 1, 1, "LMDX_unlock(name)"},
    {"LMDX_trylock", "lmdx_trylock", Kind::kNamed, 1, 1, "LMDX_trylock(name)"},
    {"LMDX_start_thread", "lmdx_start_thread", Kind::kStart, 1, 2,
     "LMDX_start_thread(function) or LMDX_start_thread(function, arg)"},
    {"LMDX_start_dthread", "lmdx_start_dthread", Kind::kStart, 1, 2,
     "LMDX_start_dthread(function) or LMDX_start_dthread(function, arg)"},
    {"LMDX_start_thread_on", "lmdx_start_thread_on", Kind::kStartOn, 2, 3,
     "LMDX_start_thread_on(node, function) or LMDX_start_thread_on(node, function, arg)"},
    {"LMDX_join_thread", "lmdx_join_thread", Kind::kThreadId, 1, 1,
     "LMDX_join_thread(thread) with a thread id or an LMDX_thread's name"},
    {"LMDX_kill_thread", "lmdx_kill_thread", Kind::kThreadId, 1, 1,
     "LMDX_kill_thread(thread) with a thread id or an LMDX_thread's name"},
    {"LMDX_exit_thread", "lmdx_exit_thread", Kind::kExit, 0, 1,
     "LMDX_exit_thread() or LMDX_exit_thread(result)"},
}};

// Constructs and macros of <lmdx/lmdx.h> that lmdxpp leaves to the C preprocessor.
constexpr std::array<std::string_view, 10> kOtherConstructs = {
    "LMDX_shared", "LMDX_thread",  "LMDX_make_dsm", "LMDX_get_dsm", "LMDX_put_dsm",
    "LMDX_malloc", "LMDX_freemem", "LMDX_task",     "LMDX_spawn",   "LMDX_wait"};

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      bool same = std::tolower(a[i - 1]) == std::tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

const Sugar* FindSugar(std::string_view identifier) {
  for (const Sugar& sugar : kSugar) {
    if (sugar.macro == identifier) return &sugar;
  }
  return nullptr;
}

bool IsKnownConstruct(std::string_view identifier) {
  return FindSugar(identifier) != nullptr ||
         std::find(kOtherConstructs.begin(), kOtherConstructs.end(), identifier) !=
             kOtherConstructs.end();
}

std::string ClosestConstruct(std::string_view identifier) {
  std::string_view best;
  std::size_t best_distance = 4;  // farther than this is not a typo
  auto consider = [&](std::string_view name) {
    std::size_t distance = EditDistance(identifier, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  };
  for (const Sugar& sugar : kSugar) consider(sugar.macro);
  for (std::string_view name : kOtherConstructs) consider(name);
  return std::string(best);
}

}  // namespace lmdx::pp
