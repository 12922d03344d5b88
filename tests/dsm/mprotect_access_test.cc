// Page access by mprotect against the kernel itself (dsm/page_access.h): a view whose pages
// alternate between writable and invalid over 140,000 pages, more runs than vm.max_map_count
// allows a process mappings, is served; the view's mappings in /proc/self/maps are the runs its
// bookkeeping counts, never more than its budget, and no page is ever more open than its access.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dsm/page_access.h"

namespace lmdx::dsm {
namespace {

using consistency::Access;

struct Mapping {
  std::uintptr_t start;
  std::uintptr_t end;
  std::string permissions;
};

// The process's mappings inside [view, view + bytes).
std::vector<Mapping> MappingsOf(const std::byte* view, std::uint64_t bytes) {
  auto begin = reinterpret_cast<std::uintptr_t>(view);
  std::vector<Mapping> found;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    Mapping mapping{};
    char dash = 0;
    std::istringstream fields(line);
    fields >> std::hex >> mapping.start >> dash >> mapping.end >> mapping.permissions;
    if (mapping.start >= begin && mapping.end <= begin + bytes) found.push_back(mapping);
  }
  return found;
}

class MprotectAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory_ = ::memfd_create("mprotect-access-test", MFD_CLOEXEC);
    ASSERT_GE(memory_, 0);
    ASSERT_EQ(::ftruncate(memory_, static_cast<off_t>(bytes_)), 0);
    void* view = ::mmap(nullptr, bytes_, PROT_NONE, MAP_SHARED | MAP_NORESERVE, memory_, 0);
    ASSERT_NE(view, MAP_FAILED);
    view_ = static_cast<std::byte*>(view);
    access_ = MakePageAccess(AccessControl::kMprotect, view_, bytes_, memory_);
  }
  void TearDown() override {
    access_.reset();
    if (view_ != nullptr) ::munmap(view_, bytes_);
    if (memory_ >= 0) ::close(memory_);
  }

  // Each page's protection, from /proc/self/maps: every page of the view lies in one mapping.
  std::vector<std::string> Protections() {
    std::vector<std::string> protections(kPages);
    std::uint64_t covered = 0;
    for (const Mapping& mapping : MappingsOf(view_, bytes_)) {
      auto first = (mapping.start - reinterpret_cast<std::uintptr_t>(view_)) / page_bytes_;
      auto end = (mapping.end - reinterpret_cast<std::uintptr_t>(view_)) / page_bytes_;
      for (auto page = first; page < end; ++page)
        protections[page] = mapping.permissions.substr(0, 3);
      covered += end - first;
    }
    EXPECT_EQ(covered, kPages);
    return protections;
  }

  static constexpr std::uint64_t kPages = 140000;
  const std::uint64_t page_bytes_ = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t bytes_ = kPages * page_bytes_;
  int memory_ = -1;
  std::byte* view_ = nullptr;
  std::unique_ptr<PageAccess> access_;
};

TEST_F(MprotectAccessTest, AlternatingPagesPastTheKernelsLimitStayWithinTheBudget) {
  // Every other page writable, as a node's own pages of a cyclic variable on 2 nodes.
  for (std::uint64_t page = 0; page < kPages; page += 2) {
    access_->Set(view_ + page * page_bytes_, 1, Access::kWrite);
  }
  MappingFigures figures = access_->mapping_figures();
  EXPECT_GT(figures.pages_closed, 0u);
  EXPECT_EQ(MappingsOf(view_, bytes_).size(), figures.runs);
  EXPECT_LE(figures.runs, figures.budget);

  std::vector<std::string> protections = Protections();
  std::uint64_t closed = 0;
  for (std::uint64_t page = 0; page < kPages; ++page) {
    if (page % 2 == 1) {
      ASSERT_EQ(protections[page], "---") << "page " << page << " is more open than its access";
      ASSERT_FALSE(access_->OpenIfNarrowed(view_ + page * page_bytes_)) << "page " << page;
      continue;
    }
    ASSERT_TRUE(protections[page] == "rw-" || protections[page] == "---") << protections[page];
    closed += protections[page] == "---" ? 1 : 0;
  }
  EXPECT_GT(closed, kPages / 4);
  // What the fault handler does before each access: a store to a page that is still closed
  // would end the test with SIGSEGV. Opening pages closes others, the least recently opened.
  auto word = [this](std::uint64_t page) {
    access_->OpenIfNarrowed(view_ + page * page_bytes_);
    return reinterpret_cast<volatile std::uint64_t*>(view_ + page * page_bytes_);
  };
  for (std::uint64_t page = 0; page < kPages; page += 2) *word(page) = page;
  figures = access_->mapping_figures();
  EXPECT_EQ(MappingsOf(view_, bytes_).size(), figures.runs);
  EXPECT_LE(figures.runs, figures.budget);
  for (std::uint64_t page = 0; page < kPages; page += 2) ASSERT_EQ(*word(page), page);
  protections = Protections();
  for (std::uint64_t page = 1; page < kPages; page += 2) ASSERT_EQ(protections[page], "---");
}

}  // namespace
}  // namespace lmdx::dsm
