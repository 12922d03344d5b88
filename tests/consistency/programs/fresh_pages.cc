// A home opens a new variable's pages for writing while another node fetches them: a write that a
// second thread of the home makes meanwhile must reach the other node after a lock handoff.
//   fresh_pages     2 nodes, with dsm { unit: 2 }, under a home-based protocol
// Rank 1 homes the variable's last two pages (one coherence unit). Its main thread learns the
// variable and opens them; with LMDX_DSM_FAULTS=open-pause=MS the opening pauses with the pages
// open, and in that window rank 0 reads the unit (fetching both pages) and rank 1's second thread
// writes the second page. Rank 0 then takes the lock after that thread and must read its write.
// Prints "verified" on rank 0.
#include <lmdx/lmdx.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kPages = 4;  // block homes on 2 nodes: pages 2 and 3 at rank 1
constexpr std::uint64_t kWritten = 0x5eedf00d;

[[noreturn]] void Fail(const std::string& what) {
  std::string text = "fresh_pages: rank " + std::to_string(lmdx_rank()) + ": " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Ok(int code, const char* call) {
  if (code != LMDX_OK) Fail(std::string(call) + " returned " + std::to_string(code));
}

std::uint64_t* Variable() {
  auto* base = static_cast<std::uint64_t*>(lmdx_shared_var("fresh", kPages * kPage));
  if (base == nullptr) Fail("lmdx_shared_var");
  return base;
}

std::uint64_t* WordOfPage(std::uint64_t* base, std::size_t page) {
  return base + page * (kPage / sizeof(std::uint64_t));
}

// Rank 1's second thread: it finds the variable while its main thread is still opening it.
void* SecondThread(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::uint64_t* base = Variable();
  Ok(lmdx_sema_v("fresh_fetch"), "lmdx_sema_v");
  Ok(lmdx_sema_p("fresh_write"), "lmdx_sema_p");
  *WordOfPage(base, 3) = kWritten;
  Ok(lmdx_lock("fresh_lock"), "lmdx_lock");
  Ok(lmdx_unlock("fresh_lock"), "lmdx_unlock");
  Ok(lmdx_sema_v("fresh_read"), "lmdx_sema_v");
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  if (lmdx_size() != 2) Fail("needs 2 nodes");
  for (const char* sema : {"fresh_fetch", "fresh_write", "fresh_read"}) {
    Ok(lmdx_sema_init(sema, 0), "lmdx_sema_init");
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (lmdx_rank() == 1) {
    lmdx_thread_t second = lmdx_start_thread_on(1, SecondThread, nullptr);
    if (second == LMDX_THREAD_INVALID) Fail("lmdx_start_thread_on");
    Variable();  // learns the variable and opens its pages here
    lmdx_join_thread(second);
  } else {
    Ok(lmdx_sema_p("fresh_fetch"), "lmdx_sema_p");
    std::uint64_t* base = Variable();
    // Page 2's unit brings page 3 too, from rank 1, before the second thread writes it.
    if (*WordOfPage(base, 2) != 0) Fail("page 2 is not zero");
    Ok(lmdx_sema_v("fresh_write"), "lmdx_sema_v");
    Ok(lmdx_sema_p("fresh_read"), "lmdx_sema_p");
    Ok(lmdx_lock("fresh_lock"), "lmdx_lock");
    const std::uint64_t seen = *WordOfPage(base, 3);
    Ok(lmdx_unlock("fresh_lock"), "lmdx_unlock");
    if (seen != kWritten) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "read 0x%llx from page 3 after the lock, not the second thread's 0x%llx",
                    static_cast<unsigned long long>(seen),
                    static_cast<unsigned long long>(kWritten));
      Fail(text);
    }
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (lmdx_rank() == 0) std::printf("verified\n");
  lmdx_finalize();
  return 0;
}
