#include "threads/scheduler.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <exception>
#include <map>
#include <string>

#include "base/error.h"
#include "base/log.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace lmdx::threads {

namespace context = boost::context;

struct UserThread::Impl {
  enum class State { kReady, kRunning, kParking, kParked };
  // Why the thread last gave its worker back.
  enum class Switch { kYield, kPark, kEnd };

  Scheduler* scheduler = nullptr;
  SchedulerWorker* worker = nullptr;
  std::function<void()> body;
  context::fiber fiber;   // the thread's own context while it does not run
  context::fiber caller;  // its worker's context while it runs
  Switch reason = Switch::kYield;

  std::mutex state_mutex;
  State state = State::kReady;
  bool wake_pending = false;

  // Stack bounds for AddressSanitizer's fiber switch annotations: the fiber's own, and its
  // worker's (learned when the fiber is first entered).
  boost::context::stack_context stack;
  const void* worker_stack_bottom = nullptr;
  std::size_t worker_stack_size = 0;
  void* fiber_fake_stack = nullptr;
  void* worker_fake_stack = nullptr;

  // Its entry in worker->timers while it is in ParkUntil (both guarded by the worker's mutex).
  std::multimap<std::chrono::steady_clock::time_point, UserThread*>::iterator timer;
  bool timer_armed = false;
};

using Clock = std::chrono::steady_clock;

struct SchedulerWorker {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable ready_changed;
  std::deque<UserThread*> ready;
  // Deadlines of its threads parked in ParkUntil. An entry lives only while its thread is inside
  // ParkUntil, which erases it on the way out, so it never names an ended thread.
  std::multimap<Clock::time_point, UserThread*> timers;
  bool stopping = false;
};

namespace {

thread_local UserThread* current_thread = nullptr;

// AddressSanitizer must know which stack runs: without these, unwinding an exception on a fiber
// (an LMDX thread's exit or kill) makes it see the worker's stack bounds and report overflows.
// They compile to nothing in other builds.
void StartSwitch(void** fake_stack_save, const void* bottom, std::size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save;
  (void)bottom;
  (void)size;
#endif
}

void FinishSwitch(void* fake_stack_save, const void** bottom_old, std::size_t* size_old) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save;
  (void)bottom_old;
  (void)size_old;
#endif
}

const void* StackBottom(const boost::context::stack_context& stack) {
  return static_cast<const char*>(stack.sp) - stack.size;
}

}  // namespace

Scheduler::Scheduler(Options options)
    : options_(options),
      stacks_(std::make_shared<StackPool>(options.stack_bytes, kIdleStacksKept)) {
  if (options_.workers < 1) {
    throw Error(LMDX_ERR_INVALID_ARGUMENT, "a scheduler needs at least one worker thread");
  }
  for (int i = 0; i < options_.workers; ++i)
    workers_.push_back(std::make_unique<SchedulerWorker>());
  for (auto& worker : workers_) {
    worker->thread = std::thread([this, raw = worker.get()] { RunWorker(*raw); });
  }
}

Scheduler::~Scheduler() {
  if (abandoned_.load(std::memory_order_acquire)) {
    // Threads still running may touch their worker: it must outlive this object.
    for (auto& worker : workers_) {
      worker->thread.detach();
      static_cast<void>(worker.release());  // NOLINT(bugprone-unused-return-value): kept to the end
    }
    return;
  }
  {
    std::unique_lock lock(live_mutex_);
    all_ended_.wait(lock, [this] { return live_.load(std::memory_order_acquire) == 0; });
  }
  for (auto& worker : workers_) {
    {
      std::lock_guard lock(worker->mutex);
      worker->stopping = true;
    }
    worker->ready_changed.notify_all();
  }
  for (auto& worker : workers_) worker->thread.join();
}

std::shared_ptr<UserThread> Scheduler::Spawn(std::function<void()> body) {
  auto thread = std::make_shared<UserThread>();
  thread->impl_ = std::make_unique<UserThread::Impl>();
  UserThread::Impl& impl = *thread->impl_;
  impl.scheduler = this;
  impl.worker =
      workers_[next_worker_.fetch_add(1, std::memory_order_relaxed) % workers_.size()].get();
  impl.body = std::move(body);
  UserThread* raw = thread.get();
  impl.fiber = context::fiber(
      std::allocator_arg, PooledStack(stacks_, &impl.stack), [raw](context::fiber&& caller) {
        UserThread::Impl& self = *raw->impl_;
        FinishSwitch(nullptr, &self.worker_stack_bottom, &self.worker_stack_size);
        self.caller = std::move(caller);
        try {
          self.body();
        } catch (const context::detail::forced_unwind&) {
          // A parked fiber destroyed at shutdown unwinds its stack with this exception, which
          // must reach Boost.Context again (it asserts that it was caught by its own frame).
          throw;
        } catch (const std::exception& error) {
          LogLine(std::string("a user-level thread ended with an exception: ") + error.what());
        } catch (...) {
          LogLine("a user-level thread ended with an exception");
        }
        self.body = nullptr;
        self.reason = UserThread::Impl::Switch::kEnd;
        StartSwitch(nullptr, self.worker_stack_bottom, self.worker_stack_size);  // for good
        return std::move(self.caller);
      });
  live_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard lock(threads_mutex_);
    threads_.emplace(raw, thread);
  }
  Enqueue(raw);
  return thread;
}

void Scheduler::Enqueue(UserThread* thread) {
  SchedulerWorker& worker = *thread->impl_->worker;
  {
    std::lock_guard lock(worker.mutex);
    worker.ready.push_back(thread);
  }
  worker.ready_changed.notify_one();
}

// Makes the threads whose deadline passed ready again (worker.mutex held). A thread that is not
// parked any more was woken by someone else and needs nothing.
void Scheduler::WakeExpired(SchedulerWorker& worker) {
  if (worker.timers.empty()) return;  // spares the clock read on every switch
  auto now = Clock::now();
  for (auto it = worker.timers.begin(); it != worker.timers.end() && it->first <= now;) {
    UserThread::Impl& impl = *it->second->impl_;
    {
      std::lock_guard state_lock(impl.state_mutex);
      if (impl.state == UserThread::Impl::State::kParked) {
        impl.state = UserThread::Impl::State::kReady;
        worker.ready.push_back(it->second);
      }
    }
    impl.timer_armed = false;
    it = worker.timers.erase(it);
  }
}

void Scheduler::RunWorker(SchedulerWorker& worker) {
  // A worker inherits the signal mask of the thread that started the runtime, which a program may
  // have blocked wholesale (for a sigwait thread of its own). The LMDX threads it runs are program
  // code, and their faults on shared memory arrive as SIGSEGV or SIGBUS: blocked, the kernel would
  // kill the node at the first one.
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  ::pthread_sigmask(SIG_UNBLOCK, &faults, nullptr);
  for (;;) {
    UserThread* thread = nullptr;
    {
      std::unique_lock lock(worker.mutex);
      auto runnable = [&] { return worker.stopping || !worker.ready.empty(); };
      for (;;) {
        WakeExpired(worker);
        if (runnable()) break;
        if (worker.timers.empty()) {
          worker.ready_changed.wait(lock);
        } else {
          worker.ready_changed.wait_until(lock, worker.timers.begin()->first);
        }
      }
      if (worker.ready.empty()) return;
      thread = worker.ready.front();
      worker.ready.pop_front();
    }
    UserThread::Impl& impl = *thread->impl_;
    {
      std::lock_guard lock(impl.state_mutex);
      impl.state = UserThread::Impl::State::kRunning;
    }
    current_thread = thread;
    StartSwitch(&impl.worker_fake_stack, StackBottom(impl.stack), impl.stack.size);
    impl.fiber = std::move(impl.fiber).resume();
    FinishSwitch(impl.worker_fake_stack, nullptr, nullptr);
    current_thread = nullptr;
    switch (impl.reason) {
      case UserThread::Impl::Switch::kYield: {
        std::lock_guard lock(impl.state_mutex);
        impl.state = UserThread::Impl::State::kReady;
      }
        Enqueue(thread);
        break;
      case UserThread::Impl::Switch::kPark: {
        bool ready = false;
        {
          std::lock_guard lock(impl.state_mutex);
          if (impl.wake_pending) {
            impl.wake_pending = false;
            impl.state = UserThread::Impl::State::kReady;
            ready = true;
          } else {
            impl.state = UserThread::Impl::State::kParked;
          }
        }
        if (ready) Enqueue(thread);
        break;
      }
      case UserThread::Impl::Switch::kEnd: Finish(thread); break;
    }
  }
}

void Scheduler::Finish(UserThread* thread) {
  Scheduler& scheduler = *thread->impl_->scheduler;
  // Counted out first, so that whoever sees the thread finished also sees it gone from live().
  // The scheduler cannot be destroyed under this: its destructor joins this worker first.
  {
    std::lock_guard lock(scheduler.live_mutex_);
    scheduler.live_.fetch_sub(1, std::memory_order_acq_rel);
  }
  scheduler.all_ended_.notify_all();
  std::shared_ptr<UserThread> keep;  // the handle lives until this function is done with it
  {
    std::lock_guard lock(scheduler.threads_mutex_);
    auto found = scheduler.threads_.find(thread);
    if (found != scheduler.threads_.end()) {
      keep = std::move(found->second);
      scheduler.threads_.erase(found);
    }
  }
  std::vector<UserThread*> joiners;
  {
    std::lock_guard lock(thread->join_mutex_);
    thread->finished_.store(true, std::memory_order_release);
    joiners.swap(thread->joiners_);
  }
  thread->join_changed_.notify_all();
  for (UserThread* joiner : joiners) Wake(joiner);
}

UserThread* Scheduler::Current() { return current_thread; }

void Scheduler::SetCurrentTag(const void* tag) {
  if (current_thread != nullptr) current_thread->tag_ = tag;
}

const void* Scheduler::CurrentTag() {
  return current_thread != nullptr ? current_thread->tag_ : nullptr;
}

void Scheduler::Yield() {
  UserThread* thread = current_thread;
  if (thread == nullptr) {
    std::this_thread::yield();
    return;
  }
  UserThread::Impl& impl = *thread->impl_;
  impl.reason = UserThread::Impl::Switch::kYield;
  // To the worker, and back here when the worker runs this thread again.
  StartSwitch(&impl.fiber_fake_stack, impl.worker_stack_bottom, impl.worker_stack_size);
  impl.caller = std::move(impl.caller).resume();
  FinishSwitch(impl.fiber_fake_stack, &impl.worker_stack_bottom, &impl.worker_stack_size);
}

void Scheduler::Park() {
  UserThread* thread = current_thread;
  if (thread == nullptr) {
    throw Error(LMDX_ERR_INTERNAL, "Park called outside a user-level thread");
  }
  UserThread::Impl& impl = *thread->impl_;
  {
    std::lock_guard lock(impl.state_mutex);
    if (impl.wake_pending) {
      impl.wake_pending = false;
      return;
    }
    impl.state = UserThread::Impl::State::kParking;
  }
  impl.reason = UserThread::Impl::Switch::kPark;
  // To the worker, and back here when the worker runs this thread again.
  StartSwitch(&impl.fiber_fake_stack, impl.worker_stack_bottom, impl.worker_stack_size);
  impl.caller = std::move(impl.caller).resume();
  FinishSwitch(impl.fiber_fake_stack, &impl.worker_stack_bottom, &impl.worker_stack_size);
}

void Scheduler::ParkUntil(Clock::time_point deadline) {
  UserThread* thread = current_thread;
  if (thread == nullptr) {
    throw Error(LMDX_ERR_INTERNAL, "ParkUntil called outside a user-level thread");
  }
  UserThread::Impl& impl = *thread->impl_;
  SchedulerWorker& worker = *impl.worker;
  {
    std::lock_guard lock(worker.mutex);
    impl.timer = worker.timers.emplace(deadline, thread);
    impl.timer_armed = true;
  }
  Park();
  std::lock_guard lock(worker.mutex);
  if (impl.timer_armed) worker.timers.erase(impl.timer);
  impl.timer_armed = false;
}

void Scheduler::Wake(UserThread* thread) {
  UserThread::Impl& impl = *thread->impl_;
  {
    std::lock_guard lock(impl.state_mutex);
    if (impl.state != UserThread::Impl::State::kParked) {
      impl.wake_pending = true;  // it parks later, or is about to: the worker sees this
      return;
    }
    impl.state = UserThread::Impl::State::kReady;
  }
  Enqueue(thread);
}

void UserThread::Join() {
  JoinUnless([] { return false; });
}

bool UserThread::JoinUnless(const std::function<bool()>& stop) {
  UserThread* self = Scheduler::Current();
  if (self == this) throw Error(LMDX_ERR_MISUSE, "a thread cannot join itself");
  if (self == nullptr) {
    std::unique_lock lock(join_mutex_);
    join_changed_.wait(lock, [this] { return finished(); });
    return true;
  }
  {
    std::lock_guard lock(join_mutex_);
    if (finished()) return true;
    joiners_.push_back(self);
  }
  for (;;) {
    if (finished()) return true;
    if (stop()) {
      std::lock_guard lock(join_mutex_);
      if (finished()) return true;
      // Finish wakes the joiners it finds: this one must not be among them once it is gone.
      auto it = std::find(joiners_.begin(), joiners_.end(), self);
      if (it != joiners_.end()) joiners_.erase(it);
      return false;
    }
    Scheduler::Park();
  }
}

}  // namespace lmdx::threads
