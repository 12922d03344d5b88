#include "threads/stack_pool.h"

namespace lmdx::threads {

StackPool::StackPool(std::size_t bytes, std::size_t keep) : maker_(bytes), keep_(keep) {}

StackPool::~StackPool() {
  for (auto& stack : idle_) maker_.deallocate(stack);
}

boost::context::stack_context StackPool::Allocate() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      boost::context::stack_context stack = idle_.back();
      idle_.pop_back();
      return stack;
    }
  }
  return maker_.allocate();
}

void StackPool::Release(boost::context::stack_context& stack) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (idle_.size() < keep_) {
      idle_.push_back(stack);
      return;
    }
  }
  maker_.deallocate(stack);
}

std::size_t StackPool::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

}  // namespace lmdx::threads
