// LMDX: the C++ API. A thin layer over the C API of <lmdx/lmdx.h>: the same calls, with spans in
// place of pointer and length. Errors follow the error mode: by default a failure ends the job
// with a clear message, as in C; after lmdx_set_error_mode(LMDX_ERRORS_RETURN) (or
// lmdx::set_error_mode(lmdx::errors::throw_exceptions)) a failing call throws lmdx::error, which
// carries the C code and its text.
#ifndef LMDX_LMDX_HPP_
#define LMDX_LMDX_HPP_

#include <lmdx/lmdx.h>

#include <google/protobuf/message.h>

#include <chrono>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
  int tag = 0;
};

// Threads style: returns on rank 0 only.
inline void init(int& argc, char**& argv) { detail::check(lmdx_init(&argc, &argv)); }
// SPMD style: returns on every rank.
inline void init_spmd(int& argc, char**& argv) { detail::check(lmdx_init_spmd(&argc, &argv)); }
inline void finalize() { detail::check(lmdx_finalize()); }
inline int rank() { return lmdx_rank(); }
inline int size() { return lmdx_size(); }

// Raw messages (see lmdx.h): tag 0 and any tag, or a tag of the caller's and a network hint.
enum class network {
  any = LMDX_NET_ANY,
  tcp = LMDX_NET_TCP,
  udp = LMDX_NET_UDP,
  shm = LMDX_NET_SHM,
  fabric = LMDX_NET_FABRIC
};
inline constexpr int any_source = LMDX_ANY_SOURCE;
inline constexpr int any_tag = LMDX_ANY_TAG;

inline void send(int dest, std::span<const std::byte> bytes) {
  detail::check(lmdx_send(dest, bytes.data(), bytes.size()));
}
inline void send(int dest, int tag, std::span<const std::byte> bytes, network hint = network::any) {
  detail::check(lmdx_send_tagged(dest, tag, bytes.data(), bytes.size(), static_cast<int>(hint)));
}
inline status recv(int source, std::span<std::byte> buffer) {
  lmdx_status st{};
  detail::check(lmdx_recv(source, buffer.data(), buffer.size(), &st));
  return status{st.source, st.length, st.tag};
}
inline status recv(int source, int tag, std::span<std::byte> buffer) {
  lmdx_status st{};
  detail::check(lmdx_recv_tagged(source, tag, buffer.data(), buffer.size(), &st));
  return status{st.source, st.length, st.tag};
}
// nullopt when no matching message was waiting.
inline std::optional<status> try_recv(int source, int tag, std::span<std::byte> buffer) {
  lmdx_status st{};
  if (detail::check(lmdx_try_recv_tagged(source, tag, buffer.data(), buffer.size(), &st)) == 1) {
    return std::nullopt;
  }
  return status{st.source, st.length, st.tag};
}

// Non-blocking raw messages: the buffer is the transfer's until wait() (or a test() that finds it
// done) returns. A request still pending when destroyed is waited for there, so no transfer
// outlives the buffer it was given (errors are then lost: wait to see them).
//
//   lmdx::request in = lmdx::irecv(left, 0, halo_in);
//   lmdx::request out = lmdx::isend(right, 0, halo_out);
//   compute_interior();
//   out.wait();
//   lmdx::status got = in.wait();
class request {
 public:
  request() noexcept = default;
  explicit request(lmdx_request_t handle) noexcept : handle_(handle) {}
  request(request&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  request& operator=(request&& other) noexcept {
    if (this != &other) {
      complete_quietly();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request() { complete_quietly(); }

  bool pending() const noexcept { return handle_ != nullptr; }
  status wait() {
    lmdx_status st{};
    detail::check(lmdx_wait_request(&handle_, &st));
    return status{st.source, st.length, st.tag};
  }
  // The status once done (the request is then complete), nullopt while the transfer goes on.
  std::optional<status> test() {
    lmdx_status st{};
    int done = 0;
    detail::check(lmdx_test(&handle_, &done, &st));
    if (done == 0) return std::nullopt;
    return status{st.source, st.length, st.tag};
  }

 private:
  void complete_quietly() noexcept {
    if (handle_ != nullptr) lmdx_wait_request(&handle_, nullptr);
  }
  lmdx_request_t handle_ = nullptr;
};

inline request isend(int dest, int tag, std::span<const std::byte> bytes,
                     network hint = network::any) {
  lmdx_request_t handle = nullptr;
  detail::check(lmdx_isend(dest, tag, bytes.data(), bytes.size(), static_cast<int>(hint), &handle));
  return request(handle);
}
inline request irecv(int source, int tag, std::span<std::byte> buffer) {
  lmdx_request_t handle = nullptr;
  detail::check(lmdx_irecv(source, tag, buffer.data(), buffer.size(), &handle));
  return request(handle);
}

// ---- Typed messages ---------------------------------------------------------------------------
//
// lmdx::Port<M> is this node's port of a name, for protobuf messages of type M:
//
//   lmdx::Port<Work> work("work");                 // opens this node's port "work" for receiving
//   work.send(2, job);                             // to port "work" on rank 2
//   lmdx::send(lmdx::PortAddress{0, "results"}, r);  // to another port name
//   auto [message, source] = work.recv();          // from any node
//
// Messages carry the port name and M's full type name. A message of another type, or one that does
// not parse as M, is an error naming the port and the sender (fatal by default; lmdx::error with
// LMDX_ERR_BAD_MESSAGE in the throwing mode) and the port goes on with the next message. Messages
// for a port not open yet wait until it opens. See docs/messages.md.

// A port on a node: the destination of a send.
struct PortAddress {
  int node = -1;
  std::string name;
};

template <typename M>
struct Received {
  M message;
  int source = -1;  // the rank that sent it
};

// An asynchronous send under way: the message's bytes live here until it is in the kernel (or the
// shared-memory ring). wait() returns then; the destructor waits too.
class PortSend {
 public:
  PortSend() = default;
  // Takes over a send started by lmdx_port_send_async and the bytes it sends.
  PortSend(std::unique_ptr<std::string> bytes, lmdx_port_send_t handle)
      : bytes_(std::move(bytes)), handle_(handle) {}
  PortSend(PortSend&& other) noexcept
      : bytes_(std::move(other.bytes_)), handle_(std::exchange(other.handle_, nullptr)) {}
  PortSend& operator=(PortSend&& other) noexcept {
    if (this != &other) {
      finish();
      bytes_ = std::move(other.bytes_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  PortSend(const PortSend&) = delete;
  PortSend& operator=(const PortSend&) = delete;
  ~PortSend() { finish(); }

  // True once the message is in the kernel or the ring (or the send failed; wait() says which).
  bool done() const { return handle_ == nullptr || lmdx_port_send_done(handle_) == 1; }
  void wait() {
    if (handle_ == nullptr) return;
    int code = lmdx_port_send_wait(std::exchange(handle_, nullptr));
    bytes_.reset();
    detail::check(code);
  }

 private:
  void finish() noexcept {
    if (handle_ != nullptr) (void)lmdx_port_send_wait(std::exchange(handle_, nullptr));
    bytes_.reset();
  }
  std::unique_ptr<std::string> bytes_;  // stays put while the handle is moved
  lmdx_port_send_t handle_ = nullptr;
};

namespace detail {
template <typename M>
std::unique_ptr<std::string> serialize(const M& message) {
  auto bytes = std::make_unique<std::string>();
  if (!message.SerializeToString(bytes.get())) {
    throw error(LMDX_ERR_INVALID_ARGUMENT,
                "a " + M::descriptor()->full_name() +
                    " lacks required fields: " + message.InitializationErrorString());
  }
  return bytes;
}
}  // namespace detail

// Sends message to the port to.name on node to.node; returns when message may change.
template <typename M>
requires std::derived_from<M, google::protobuf::Message>
void send(const PortAddress& to, const M& message) {
  std::unique_ptr<std::string> bytes = detail::serialize(message);
  detail::check(lmdx_port_send(to.node, to.name.c_str(), M::descriptor()->full_name().c_str(),
                               bytes->data(), bytes->size()));
}

// Starts the same send and returns at once (message may change at once too).
template <typename M>
requires std::derived_from<M, google::protobuf::Message> PortSend send_async(const PortAddress& to,
                                                                             const M& message) {
  std::unique_ptr<std::string> bytes = detail::serialize(message);
  lmdx_port_send_t handle = nullptr;
  detail::check(lmdx_port_send_async(to.node, to.name.c_str(), M::descriptor()->full_name().c_str(),
                                     bytes->data(), bytes->size(), &handle));
  return PortSend(std::move(bytes), handle);
}

template <typename M>
class Port {
  static_assert(std::is_base_of_v<google::protobuf::Message, M>,
                "lmdx::Port<M> takes a protobuf message type");

 public:
  // Opens this node's port name for receiving; one Port per name and node at a time.
  explicit Port(std::string name)
      : name_(std::move(name)), handle_(lmdx_port_open(name_.c_str(), type_name().c_str())) {
    if (handle_ == nullptr) {
      detail::check(lmdx_last_error() < 0 ? lmdx_last_error() : LMDX_ERR_INTERNAL);
    }
  }
  Port(Port&& other) noexcept
      : name_(std::move(other.name_)), handle_(std::exchange(other.handle_, nullptr)) {}
  Port& operator=(Port&&) = delete;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;
  ~Port() {
    if (handle_ != nullptr) (void)lmdx_port_close(handle_);
  }

  const std::string& name() const { return name_; }
  static const std::string& type_name() { return M::descriptor()->full_name(); }

  // To the port of this name on node (this node too).
  void send(int node, const M& message) const { lmdx::send(PortAddress{node, name_}, message); }
  void send(const PortAddress& to, const M& message) const { lmdx::send(to, message); }
  PortSend send_async(int node, const M& message) const {
    return lmdx::send_async(PortAddress{node, name_}, message);
  }
  PortSend send_async(const PortAddress& to, const M& message) const {
    return lmdx::send_async(to, message);
  }

  // The next message, from any node; waits as long as it takes.
  Received<M> recv() { return *receive(-1); }
  // The next message if one is there.
  std::optional<Received<M>> try_recv() { return receive(0); }
  // The next message if one comes within timeout.
  std::optional<Received<M>> recv_for(std::chrono::milliseconds timeout) {
    auto ms = timeout.count();
    return receive(ms <= 0 ? 0 : ms >= INT_MAX ? INT_MAX : static_cast<int>(ms));
  }

 private:
  std::optional<Received<M>> receive(int timeout_ms) {
    lmdx_port_message raw{};
    if (detail::check(lmdx_port_recv(handle_, timeout_ms, &raw)) == 1) return std::nullopt;
    Received<M> received;
    received.source = raw.source;
    bool parsed = false;
    try {
      parsed = raw.length <= static_cast<std::size_t>(INT_MAX) &&
               received.message.ParseFromArray(raw.data, static_cast<int>(raw.length));
    } catch (...) {
      lmdx_port_release(&raw);
      throw;
    }
    if (!parsed) {
      // Fatal by default; LMDX_ERR_BAD_MESSAGE in the throwing mode. The message is dropped.
      detail::check(lmdx_port_reject(handle_, &raw));
      throw error(LMDX_ERR_BAD_MESSAGE, "a message of port " + name_ + " does not parse");
    }
    lmdx_port_release(&raw);
    return received;
  }

  std::string name_;
  lmdx_port_t handle_;
};

// ---- Modules (lmdx.h, docs/configuration.md#modules, docs/messages.md) ------------------------
//
//   auto results = lmdx::module_port<Result>("results_in");  // this module's port, opened
//   auto work = lmdx::link<WorkItem>("work_out");              // where this module's port leads
//   work.send(2, item);                                         // to member 2 of the linked module
//   work.send_all(stop);                                        // to every member

// This rank's module: its name ("" without modules), this rank's index in it, its member count
// (-1 without modules).
inline std::string module_name() {
  const char* name = lmdx_module_name();
  return name != nullptr ? name : "";
}
inline int module_rank() { return lmdx_module_rank(); }
inline int module_size() { return lmdx_module_size(); }
// The job rank of a module's member.
inline int module_member(const std::string& module, int index) {
  return detail::check(lmdx_module_member(module.c_str(), index));
}

// Runs this rank's module's entry (lmdx_run_modules); entries need no {nullptr, nullptr} end.
inline int run_modules(std::initializer_list<lmdx_module_entry> entries) {
  std::vector<lmdx_module_entry> table(entries);
  table.push_back(lmdx_module_entry{nullptr, nullptr});
  return detail::check(lmdx_run_modules(table.data()));
}

namespace detail {
inline const char* check_name(const char* name) {
  if (name == nullptr) check(lmdx_last_error() < 0 ? lmdx_last_error() : LMDX_ERR_INTERNAL);
  return name;
}
}  // namespace detail

// Opens this module's port (declared in the configuration) as the lmdx::Port<M> named
// "<module>.<port>".
template <typename M>
requires std::derived_from<M, google::protobuf::Message> Port<M> module_port(
    const std::string& port) {
  return Port<M>(detail::check_name(lmdx_module_port(port.c_str())));
}

// The sending end of this module's port: a message goes to the port the configuration links it
// to, on one member of the linked module (by index) or on every member.
template <typename M>
class Link {
  static_assert(std::is_base_of_v<google::protobuf::Message, M>,
                "lmdx::Link<M> takes a protobuf message type");

 public:
  explicit Link(std::string port)
      : port_(std::move(port)),
        to_(detail::check_name(lmdx_link_port(port_.c_str()))),
        size_(detail::check(lmdx_link_size(port_.c_str()))) {}

  const std::string& port() const { return port_; }  // this module's port
  const std::string& to() const { return to_; }      // "<module>.<port>" it leads to
  int size() const { return size_; }                 // members of the linked module

  // The port of the linked module's member index (outside the module: an error naming both).
  PortAddress address(int index) const {
    return PortAddress{detail::check(lmdx_link_member(port_.c_str(), index)), to_};
  }
  void send(int index, const M& message) const { lmdx::send(address(index), message); }
  PortSend send_async(int index, const M& message) const {
    return lmdx::send_async(address(index), message);
  }
  // To every member of the linked module, in index order (one send each).
  void send_all(const M& message) const {
    std::unique_ptr<std::string> bytes = detail::serialize(message);
    for (int index = 0; index < size_; ++index) {
      detail::check(lmdx_port_send(address(index).node, to_.c_str(),
                                   M::descriptor()->full_name().c_str(), bytes->data(),
                                   bytes->size()));
    }
  }

 private:
  std::string port_;
  std::string to_;
  int size_;
};

// lmdx::link<M>("work_out"): the sender of this module's port work_out.
template <typename M>
requires std::derived_from<M, google::protobuf::Message> Link<M> link(std::string port) {
  return Link<M>(std::move(port));
}

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

// ---- Groups (see lmdx.h and docs/groups.md) ---------------------------------------------------

// A named group of ranks: lmdx::group evens{"evens", {0, 2, 4}}; every member constructs it with
// the same list. Spans hold trivially copyable elements (std::span(vector) works); the group's
// calls move their bytes.
class group {
 public:
  group(const char* name, std::span<const int> ranks)
      : handle_(detail::check_pointer<lmdx_group_object>(
            lmdx_group_create(name, ranks.data(), static_cast<int>(ranks.size())))) {}
  group(const char* name, std::initializer_list<int> ranks)
      : group(name, std::span<const int>(ranks.begin(), ranks.size())) {}
  explicit group(lmdx_group_t handle) : handle_(handle) {}

  int size() const { return detail::check(lmdx_group_size(handle_)); }
  // This rank's index in the group, or -1 when it is not a member.
  int rank() const {
    int index = lmdx_group_rank(handle_);
    return index >= -1 ? index : detail::check(index);
  }
  bool is_member() const { return rank() >= 0; }
  lmdx_group_t native_handle() const { return handle_; }

  // To every other member.
  template <typename T, std::size_t E>
  void send(std::span<T, E> data) {
    static_assert(std::is_trivially_copyable_v<T>, "groups move trivially copyable elements");
    detail::check(lmdx_group_send(handle_, data.data(), data.size_bytes()));
  }
  // The next message another member sent; status::length is in bytes.
  template <typename T, std::size_t E>
  status recv(std::span<T, E> buffer) {
    static_assert(!std::is_const_v<T> && std::is_trivially_copyable_v<T>,
                  "receives go into writable, trivially copyable elements");
    lmdx_status st{};
    detail::check(lmdx_group_recv(handle_, buffer.data(), buffer.size_bytes(), &st));
    return status{st.source, st.length};
  }
  // The root's data into data on every member.
  template <typename T, std::size_t E>
  void bcast(int root, std::span<T, E> data) {
    static_assert(!std::is_const_v<T> && std::is_trivially_copyable_v<T>,
                  "a broadcast writes trivially copyable elements");
    detail::check(lmdx_bcast(handle_, root, data.data(), data.size_bytes()));
  }
  // Every member's send, in index order, into recv at the root (size() times send's bytes;
  // recv may be empty elsewhere).
  template <typename S, std::size_t SE, typename R, std::size_t RE>
  void gather(int root, std::span<S, SE> send, std::span<R, RE> recv) {
    static_assert(
        !std::is_const_v<R> && std::is_trivially_copyable_v<R> && std::is_trivially_copyable_v<S>,
        "a gather moves trivially copyable elements");
    if (rank() == root &&
        recv.size_bytes() < send.size_bytes() * static_cast<std::size_t>(size())) {
      throw error(LMDX_ERR_INVALID_ARGUMENT,
                  "lmdx::group::gather: the root's receive span holds " +
                      std::to_string(recv.size_bytes()) + " bytes, not " +
                      std::to_string(send.size_bytes() * static_cast<std::size_t>(size())));
    }
    detail::check(lmdx_gather(handle_, root, send.data(), send.size_bytes(), recv.data()));
  }
  // send and recv: size() equal blocks each; block j of send goes to member j, block j of recv
  // comes from member j.
  template <typename S, std::size_t SE, typename R, std::size_t RE>
  void alltoall(std::span<S, SE> send, std::span<R, RE> recv) {
    static_assert(
        !std::is_const_v<R> && std::is_trivially_copyable_v<R> && std::is_trivially_copyable_v<S>,
        "an all-to-all moves trivially copyable elements");
    const auto members = static_cast<std::size_t>(size());
    if (send.size_bytes() % members != 0 || recv.size_bytes() != send.size_bytes()) {
      throw error(LMDX_ERR_INVALID_ARGUMENT,
                  "lmdx::group::alltoall: send and receive spans must hold the same number of "
                  "bytes, a multiple of the group's size " +
                      std::to_string(members) + " (they hold " + std::to_string(send.size_bytes()) +
                      " and " + std::to_string(recv.size_bytes()) + ")");
    }
    detail::check(lmdx_alltoall(handle_, send.data(), send.size_bytes() / members, recv.data()));
  }

 private:
  lmdx_group_t handle_;
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

// ---- LMDX threads (docs/threads.md, docs/cpp.md) ------------------------------------------------
//
//   lmdx::thread worker(1, [=] { rows[i] = work(i); });   // on node 1; lmdx::any_node lets LMDX
//   worker.join();                                        // place it (round-robin by default)
//
// The closure is copied into shared memory, where the new thread reads it on whatever node runs
// it: capture by value, and only pointers into shared memory. A joinable thread is joined by its
// destructor (as std::jthread), so no thread outlives what its starter meant it to see.

inline constexpr int any_node = -1;

// The C calls, failing as every C++ call does (the error mode).
inline lmdx_thread_t start_thread(void* (*fn)(void*), void* arg, int node = any_node) {
  lmdx_thread_t id =
      node == any_node ? lmdx_start_thread(fn, arg) : lmdx_start_thread_on(node, fn, arg);
  if (id == LMDX_THREAD_INVALID)
    detail::check(lmdx_last_error() < 0 ? lmdx_last_error() : LMDX_ERR_INTERNAL);
  return id;
}
inline void* join_thread(lmdx_thread_t id) {
  lmdx_clear_error();  // NULL is also what a thread may return
  void* result = lmdx_join_thread(id);
  if (result == nullptr && lmdx_last_error() < 0) detail::check(lmdx_last_error());
  return result;
}

namespace detail {
// Runs on the new thread's node: takes its own copy of the closure out of shared memory, frees
// the shared one (lmdx_free works from any node), and runs it.
template <typename F>
void* run_thread_closure(void* shared_closure) {
  alignas(F) std::byte bytes[sizeof(F)];
  std::memcpy(bytes, shared_closure, sizeof(F));
  lmdx_free(shared_closure);
  (*std::launder(reinterpret_cast<F*>(bytes)))();
  return nullptr;
}
}  // namespace detail

class thread {
 public:
  thread() noexcept = default;
  template <typename F>
  requires std::invocable<F&>
  explicit thread(const F& closure) : thread(any_node, closure) {}
  template <typename F>
  requires std::invocable<F&> thread(int node, const F& closure) {
    static_assert(std::is_trivially_copyable_v<F>,
                  "lmdx::thread copies the closure byte for byte to the node that runs it: "
                  "capture trivially copyable values, by value");
    void* shared = detail::check_pointer<void>(lmdx_malloc(sizeof(F)));
    std::memcpy(shared, &closure, sizeof(F));
    try {
      id_ = start_thread(&detail::run_thread_closure<F>, shared, node);
    } catch (...) {
      lmdx_free(shared);
      throw;
    }
  }
  thread(thread&& other) noexcept : id_(std::exchange(other.id_, LMDX_THREAD_INVALID)) {}
  thread& operator=(thread&& other) noexcept {
    if (this != &other) {
      if (joinable()) lmdx_join_thread(id_);
      id_ = std::exchange(other.id_, LMDX_THREAD_INVALID);
    }
    return *this;
  }
  thread(const thread&) = delete;
  thread& operator=(const thread&) = delete;
  ~thread() {
    if (joinable()) lmdx_join_thread(id_);
  }

  bool joinable() const noexcept { return id_ != LMDX_THREAD_INVALID; }
  lmdx_thread_t id() const noexcept { return id_; }
  void join() {
    if (!joinable()) throw error(LMDX_ERR_MISUSE, "lmdx::thread::join: no thread to join");
    join_thread(std::exchange(id_, LMDX_THREAD_INVALID));
  }

 private:
  lmdx_thread_t id_ = LMDX_THREAD_INVALID;
};

// ---- Tasks (docs/tasks.md) --------------------------------------------------------------------
//
//   lmdx::spawn([=] { out[i] = work(i); });        // a closure, copied byte for byte
//   Fib call{30};
//   lmdx::spawn(call, [](Fib& c) { ... });          // typed arguments, written back at the wait
//   lmdx::wait();
//
// A task may run on another node, where only its bytes arrive: a closure captures by value, and
// a pointer it captures must point into shared memory.

namespace detail {
template <typename F>
void run_closure(void* bytes) {
  (*static_cast<F*>(bytes))();
}
template <typename A, typename F>
void run_on_arguments(void* bytes) {
  F{}(*static_cast<A*>(bytes));
}
}  // namespace detail

template <typename F>
requires std::invocable<F&>
void spawn(const F& closure) {
  static_assert(std::is_trivially_copyable_v<F>,
                "lmdx::spawn copies the closure byte for byte to the node that runs it: capture "
                "trivially copyable values, by value");
  detail::check(lmdx_spawn_copy(&detail::run_closure<F>, &closure, sizeof(F)));
}

// body is a lambda without captures, called with the task's copy of args; that copy is written
// over args before the spawner's next lmdx::wait returns.
template <typename A, typename F>
requires std::is_empty_v<F> && std::default_initializable<F> && std::invocable<F&, A&>
void spawn(A& args, F /*body*/) {
  static_assert(std::is_trivially_copyable_v<A>,
                "a task's arguments travel byte for byte: they must be trivially copyable");
  detail::check(lmdx_spawn(&detail::run_on_arguments<A, F>, &args, sizeof(A)));
}

inline void wait() { detail::check(lmdx_wait()); }

}  // namespace lmdx

#endif  // LMDX_LMDX_HPP_
