// Stacks of user-level threads, kept for reuse. A new stack costs an mmap and a guard-page
// mprotect, tens of microseconds on a virtual machine; a stack from the pool costs a lock.
#ifndef LMDX_THREADS_STACK_POOL_H_
#define LMDX_THREADS_STACK_POOL_H_

#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace lmdx::threads {

class StackPool {
 public:
  // Stacks of `bytes` (a guard page below each); up to `keep` idle ones are kept.
  StackPool(std::size_t bytes, std::size_t keep);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  boost::context::stack_context Allocate();
  void Release(boost::context::stack_context& stack) noexcept;
  std::size_t idle() const;

 private:
  boost::context::protected_fixedsize_stack maker_;
  std::size_t keep_;
  mutable std::mutex mutex_;
  std::vector<boost::context::stack_context> idle_;
};

// The stack allocator each fiber gets: it shares the pool, so a fiber that ends after its
// scheduler still returns its stack somewhere valid.
class PooledStack {
 public:
  // allocated, when given, learns the stack handed out (AddressSanitizer must be told a fiber's
  // stack bounds on every switch).
  explicit PooledStack(std::shared_ptr<StackPool> pool,
                       boost::context::stack_context* allocated = nullptr)
      : pool_(std::move(pool)), allocated_(allocated) {}
  boost::context::stack_context allocate() {
    boost::context::stack_context stack = pool_->Allocate();
    if (allocated_ != nullptr) *allocated_ = stack;
    return stack;
  }
  void deallocate(boost::context::stack_context& stack) noexcept { pool_->Release(stack); }

 private:
  std::shared_ptr<StackPool> pool_;
  boost::context::stack_context* allocated_;
};

}  // namespace lmdx::threads

#endif  // LMDX_THREADS_STACK_POOL_H_
