// LMDX: the C++ API. A thin layer over the C API of <lmdx/lmdx.h>: the same calls, with spans in
// place of pointer and length. Errors follow the error mode: by default a failure ends the job
// with a clear message, as in C; after lmdx_set_error_mode(LMDX_ERRORS_RETURN) (or
// lmdx::set_error_mode(lmdx::errors::throw_exceptions)) a failing call throws lmdx::error, which
// carries the C code and its text.
#ifndef LMDX_LMDX_HPP_
#define LMDX_LMDX_HPP_

#include <lmdx/lmdx.h>

#include <cstddef>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace lmdx {

// Thrown by every C++ call that fails; code() is the C API's lmdx_error.
class error : public std::runtime_error {
 public:
  error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {
inline int check(int code) {
  if (code < 0) {
    const char* text = lmdx_last_error_message();
    throw error(code, text != nullptr && *text != '\0' ? text : lmdx_strerror(code));
  }
  return code;
}
// Calls returning a pointer report failure as nullptr.
template <typename T>
T* check_pointer(void* pointer) {
  if (pointer == nullptr) check(lmdx_last_error() < 0 ? lmdx_last_error() : LMDX_ERR_INTERNAL);
  return static_cast<T*>(pointer);
}
}  // namespace detail

enum class errors { fatal = LMDX_ERRORS_ARE_FATAL, throw_exceptions = LMDX_ERRORS_RETURN };
inline void set_error_mode(errors mode) { lmdx_set_error_mode(static_cast<lmdx_error_mode>(mode)); }

struct status {
  int source = -1;
  std::size_t length = 0;
};

// Threads style: returns on rank 0 only.
inline void init(int& argc, char**& argv) { detail::check(lmdx_init(&argc, &argv)); }
// SPMD style: returns on every rank.
inline void init_spmd(int& argc, char**& argv) { detail::check(lmdx_init_spmd(&argc, &argv)); }
inline void finalize() { detail::check(lmdx_finalize()); }
inline int rank() { return lmdx_rank(); }
inline int size() { return lmdx_size(); }

inline void send(int dest, std::span<const std::byte> bytes) {
  detail::check(lmdx_send(dest, bytes.data(), bytes.size()));
}
inline status recv(int source, std::span<std::byte> buffer) {
  lmdx_status st{};
  detail::check(lmdx_recv(source, buffer.data(), buffer.size(), &st));
  return status{st.source, st.length};
}
inline constexpr int any_source = LMDX_ANY_SOURCE;

// Synchronisation across nodes (see lmdx.h). Objects are looked up once, by name.
class barrier {
 public:
  explicit barrier(const char* name) : handle_(lmdx_barrier_find(name)) {
    if (handle_ == nullptr) detail::check(LMDX_ERR_INVALID_ARGUMENT);
  }
  barrier(const char* name, int count) : barrier(name) { init(count); }
  void init(int count) { detail::check(lmdx_barrier_init_h(handle_, count)); }
  void wait() { detail::check(lmdx_barrier_h(handle_)); }
  // SPMD style: every rank, one thread each.
  static void all() { detail::check(lmdx_barrier_all()); }

 private:
  lmdx_barrier_t handle_;
};

class semaphore {
 public:
  explicit semaphore(const char* name) : handle_(lmdx_sema_find(name)) {
    if (handle_ == nullptr) detail::check(LMDX_ERR_INVALID_ARGUMENT);
  }
  semaphore(const char* name, int value) : semaphore(name) { init(value); }
  void init(int value) { detail::check(lmdx_sema_init_h(handle_, value)); }
  void acquire() { detail::check(lmdx_sema_p_h(handle_)); }  // P
  void release() { detail::check(lmdx_sema_v_h(handle_)); }  // V

 private:
  lmdx_sema_t handle_;
};

// Meets the standard Lockable requirements: std::lock_guard<lmdx::mutex> and std::unique_lock
// work with it.
class mutex {
 public:
  explicit mutex(const char* name) : handle_(lmdx_lock_find(name)) {
    if (handle_ == nullptr) detail::check(LMDX_ERR_INVALID_ARGUMENT);
  }
  void lock() { detail::check(lmdx_lock_h(handle_)); }
  void unlock() { detail::check(lmdx_unlock_h(handle_)); }
  bool try_lock() { return detail::check(lmdx_trylock_h(handle_)) == 0; }
  lmdx_lock_t native_handle() const { return handle_; }

 private:
  lmdx_lock_t handle_;
};

// Holds a named lock for a scope.
class lock_guard {
 public:
  explicit lock_guard(mutex& m) : mutex_(m) { mutex_.lock(); }
  // An unlock that fails (the job is ending) cannot throw from a destructor: the error mode's
  // fatal path has reported it already, or the return mode's code is dropped here.
  ~lock_guard() { lmdx_unlock_h(mutex_.native_handle()); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  mutex& mutex_;
};

// ---- Shared memory ----------------------------------------------------------------------------

// Typed access to a named shared variable: lmdx::shared<double[1024][1024]> grid{"grid"};
// then grid[i][j] reads and writes shared memory on any node. T is a trivially copyable type or
// an array of them (its bytes move between nodes).
template <typename T>
class shared {
 public:
  static_assert(std::is_trivially_copyable_v<std::remove_all_extents_t<T>>,
                "shared memory holds trivially copyable types");
  explicit shared(const char* name)
      : data_(detail::check_pointer<T>(lmdx_shared_var(name, sizeof(T)))) {}

  T& operator*() const { return *data_; }
  T* operator->() const { return data_; }
  T* get() const { return data_; }
  // For arrays: grid[i] is the i-th element (a row for arrays of arrays).
  template <typename U = T>
  requires std::is_array_v<U>
  auto& operator[](std::size_t index) const { return (*data_)[index]; }
  static constexpr std::size_t size_bytes() { return sizeof(T); }

 private:
  T* data_;
};

// A standard allocator over the shared heap: std::vector<int, lmdx::allocator<int>> keeps its
// elements in shared memory (the vector object itself stays where it is declared).
template <typename T>
struct allocator {
  using value_type = T;
  allocator() noexcept = default;
  template <typename U>
  allocator(const allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(std::size_t count) {
    if (count > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return detail::check_pointer<T>(lmdx_malloc(count * sizeof(T)));
  }
  void deallocate(T* pointer, std::size_t) noexcept { lmdx_free(pointer); }
  template <typename U>
  bool operator==(const allocator<U>&) const noexcept {
    return true;
  }
};

// Copies between private and shared memory without faults.
inline void get(void* destination, const void* shared_source, std::size_t bytes) {
  detail::check(lmdx_get(destination, shared_source, bytes));
}
inline void put(void* shared_destination, const void* source, std::size_t bytes) {
  detail::check(lmdx_put(shared_destination, source, bytes));
}

}  // namespace lmdx

#endif  // LMDX_LMDX_HPP_
