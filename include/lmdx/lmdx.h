/* LMDX: distributed shared memory for C and C++. The C API.
 *
 * A job is N node processes of one executable, started by `lmdx run -n N prog` on one machine or
 * by a cluster launcher. Two styles:
 *   - threads style: lmdx_init() returns on rank 0 only, which runs the program; every other rank
 *     serves the job until rank 0's main returns, then exits with rank 0's status.
 *   - SPMD style: lmdx_init_spmd() returns on every rank; lmdx_finalize() is collective.
 *
 * Errors: by default a misuse or failure ends the job with one message naming the call, the rank
 * and the reason. After lmdx_set_error_mode(LMDX_ERRORS_RETURN), calls return a negative
 * lmdx_error code instead and lmdx_strerror() gives its text.
 */
#ifndef LMDX_LMDX_H_
#define LMDX_LMDX_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: every call that can fail returns 0 (or a non-negative result) or one of these. */
typedef enum lmdx_error {
  LMDX_OK = 0,
  LMDX_ERR_NOT_INITIALIZED = -1, /* called before lmdx_init or after lmdx_finalize */
  LMDX_ERR_ALREADY_INITIALIZED = -2,
  LMDX_ERR_INVALID_ARGUMENT = -3, /* a null pointer, a bad rank, a bad size */
  LMDX_ERR_TRUNCATED = -4,        /* a received message is longer than the buffer given */
  LMDX_ERR_PEER_LOST = -5,        /* a node of the job vanished */
  LMDX_ERR_BOOTSTRAP = -6,        /* the node could not learn its rank or join the job */
  LMDX_ERR_NETWORK = -7,          /* a transport failed */
  LMDX_ERR_SHUTDOWN = -8,         /* the job is ending */
  LMDX_ERR_INTERNAL = -9,
  LMDX_ERR_MISUSE = -10,     /* an object used against its rules: unlock by a non-holder, a name
                               used as two kinds, more arrivals than a count, a bad free */
  LMDX_ERR_CONFIG = -11,     /* the configuration file or an override is invalid */
  LMDX_ERR_NO_MEMORY = -12,  /* shared memory exhausted, or the global range cannot be reserved */
  LMDX_ERR_BAD_MESSAGE = -13 /* a typed message of another type than its port's, or that does
                               not parse as it; the message is dropped, the port goes on */
} lmdx_error;

typedef enum lmdx_error_mode {
  LMDX_ERRORS_ARE_FATAL = 0, /* the default: print one clear line and end the job */
  LMDX_ERRORS_RETURN = 1     /* return the negative code; lmdx_last_error_message() says more */
} lmdx_error_mode;

/* Threads style: returns on rank 0 only; other ranks serve the job, then exit with rank 0's
 * status. Removes LMDX's own options from argc/argv. */
int lmdx_init(int* argc, char*** argv);

/* SPMD style: returns on every rank. */
int lmdx_init_spmd(int* argc, char*** argv);

/* lmdx_init as the main lmdxpp generates calls it (for a program that does not call lmdx_init
 * itself): the same, and a deadlock report then says that lmdxpp chose threads style for file. */
int lmdx_init_from_lmdxpp(int* argc, char*** argv, const char* file);

/* SPMD style: collective; every rank calls it, and it returns once every rank has. In threads
 * style it is called for you when rank 0's main returns, and calling it there ends the job. */
int lmdx_finalize(void);

int lmdx_rank(void);
int lmdx_size(void);

void lmdx_set_error_mode(lmdx_error_mode mode);
lmdx_error_mode lmdx_get_error_mode(void);
const char* lmdx_strerror(int code);
/* The full text of the last error returned to the calling thread (empty when there is none).
 * The error mode applies to the whole process. */
const char* lmdx_last_error_message(void);
/* The code of this thread's last failed call (LMDX_ERRORS_RETURN mode), for calls that return a
 * pointer and so report failure as NULL, and for those that return nothing (lmdx_free). */
int lmdx_last_error(void);
/* Forgets this thread's last error, so that a call whose success may return NULL (lmdx_join_thread
 * of a thread that returned NULL) can be told from one that failed. */
void lmdx_clear_error(void);

/* Raw messages. Each carries a tag (an int >= 0 the sender chooses; lmdx_send sends tag 0).
 * A receive names a source (or LMDX_ANY_SOURCE) and a tag (or LMDX_ANY_TAG; lmdx_recv and
 * lmdx_try_recv take any tag) and gets the first message that matches, in the order each source
 * sent them: a later message with another tag may be received first, two messages of one source
 * that both match never overtake each other. */
#define LMDX_ANY_SOURCE (-1)
#define LMDX_ANY_TAG (-1)

/* Appended fields keep the layout of the older ones. */
typedef struct lmdx_status {
  int source;    /* the rank that sent the message */
  size_t length; /* its length in bytes */
  int tag;       /* its tag */
} lmdx_status;

/* Network hints (MDX-cc's mode): the network a message should take. A hint for a network the two
 * ranks share sends the message over it; any other falls back to the pair's own network (the one
 * `lmdx run --show-transports` shows) and is counted (LMDX_TRANSPORT_STATS=1, LMDX_STATS).
 * Messages of one pair keep their order whatever networks carry them. */
typedef enum lmdx_net_hint {
  LMDX_NET_ANY = 0, /* the pair's own network */
  LMDX_NET_TCP = 1,
  LMDX_NET_UDP = 2,
  LMDX_NET_SHM = 3,
  LMDX_NET_FABRIC = 4
} lmdx_net_hint;

/* Sends len bytes to rank dest (which may be this rank), tag 0. Returns when buf may be reused.
 * Messages between one pair of ranks arrive in the order they were sent. */
int lmdx_send(int dest, const void* buf, size_t len);

/* Receives the next message from src (or from any rank with LMDX_ANY_SOURCE), whatever its tag,
 * into buf. A message longer than cap is an error (LMDX_ERR_TRUNCATED); it is not delivered in
 * part. With LMDX_ERRORS_RETURN the message stays queued, so a second call with a larger buffer
 * gets it. status may be NULL. */
int lmdx_recv(int src, void* buf, size_t cap, lmdx_status* status);

/* Like lmdx_recv, but returns LMDX_OK when a message was received, 1 when none was waiting. */
int lmdx_try_recv(int src, void* buf, size_t cap, lmdx_status* status);

/* lmdx_send with a tag (>= 0) and a network hint (an lmdx_net_hint). */
int lmdx_send_tagged(int dest, int tag, const void* buf, size_t len, int net_hint);
/* lmdx_recv and lmdx_try_recv for one tag, or LMDX_ANY_TAG. */
int lmdx_recv_tagged(int src, int tag, void* buf, size_t cap, lmdx_status* status);
int lmdx_try_recv_tagged(int src, int tag, void* buf, size_t cap, lmdx_status* status);

/* Non-blocking raw messages: each call starts the transfer and returns a request, so the program
 * computes while the network moves the bytes. The buffer belongs to the transfer until the request
 * completes: do not write a send's buffer, nor read a receive's, before then. Every request is
 * completed by lmdx_wait_request, or by an lmdx_test that finds it done; either frees it and sets
 * it to NULL (a NULL request completes at once). Messages match receives as for lmdx_recv_tagged,
 * posted receives in the order they were posted; a pair's messages keep their order, blocking and
 * non-blocking alike. A shared buffer is copied out at lmdx_isend, and received into at the call
 * that completes the receive. */
typedef struct lmdx_request_object* lmdx_request_t;
int lmdx_isend(int dest, int tag, const void* buf, size_t len, int net_hint,
               lmdx_request_t* request);
int lmdx_irecv(int src, int tag, void* buf, size_t cap, lmdx_request_t* request);
/* Sets *done to 1 and completes the request (status as lmdx_recv's for a receive; for a send,
 * source is the destination) when it is done, else sets *done to 0 and returns at once. A failed
 * transfer is reported here (LMDX_ERR_TRUNCATED, LMDX_ERR_PEER_LOST), per the error mode. */
int lmdx_test(lmdx_request_t* request, int* done, lmdx_status* status);
/* Waits until the request is done and completes it; status may be NULL. */
int lmdx_wait_request(lmdx_request_t* request, lmdx_status* status);

/* Ports: named mailboxes for typed messages (the C++ API's lmdx::Port<M> sits on these calls).
 * A message goes to a port name on a node and carries the name of its type; the port, opened
 * for one type, receives messages from any node in the order each node sent them. Messages for a
 * port this node has not opened yet wait for it. A message of another type is an error,
 * LMDX_ERR_BAD_MESSAGE, naming the port and the sender; it is dropped and the port goes on. */
typedef struct lmdx_port_object* lmdx_port_t;

typedef struct lmdx_port_message {
  int source;            /* the rank that sent it */
  const void* data;      /* its bytes, valid until lmdx_port_release */
  size_t length;         /* their number */
  const char* type_name; /* the type the sender named (the port's type) */
  void* internal;        /* for the runtime */
} lmdx_port_message;

/* Opens this node's port name for messages of type_name (for protobuf messages, the full name of
 * the type). NULL on failure: a port of that name is open already (LMDX_ERR_MISUSE). */
lmdx_port_t lmdx_port_open(const char* name, const char* type_name);
/* Closes the port; messages that arrive later wait for it to be opened again. After
 * lmdx_finalize it does nothing. */
int lmdx_port_close(lmdx_port_t port);
/* Receives the port's next message, from any node. timeout_ms < 0: waits as long as it takes;
 * 0: only a message already there; > 0: at most that long. Returns LMDX_OK with *message filled
 * in, 1 when nothing came in time, or an error (LMDX_ERR_BAD_MESSAGE for a message of another
 * type, which is dropped). Release every received message with lmdx_port_release. */
int lmdx_port_recv(lmdx_port_t port, int timeout_ms, lmdx_port_message* message);
void lmdx_port_release(lmdx_port_message* message);
/* Reports a received message the caller cannot decode as the port's type, as lmdx_port_recv
 * reports one of another type (fatal by default; else LMDX_ERR_BAD_MESSAGE), and releases it. */
int lmdx_port_reject(lmdx_port_t port, lmdx_port_message* message);

/* Sends len bytes as a message of type_name to the port name on node (any rank, this one too).
 * Returns when bytes may be reused. */
int lmdx_port_send(int node, const char* name, const char* type_name, const void* bytes,
                   size_t len);
/* Starts the same send and returns at once; bytes must stay valid until lmdx_port_send_wait.
 * *handle is NULL when the call fails. */
typedef struct lmdx_port_send_object* lmdx_port_send_t;
int lmdx_port_send_async(int node, const char* name, const char* type_name, const void* bytes,
                         size_t len, lmdx_port_send_t* handle);
/* 1 once the message is in the kernel or the shared-memory ring, else 0; the handle stays. */
int lmdx_port_send_done(lmdx_port_send_t handle);
/* Waits until the message is in the kernel or the ring (LMDX_ERR_PEER_LOST when the node
 * vanished first) and frees the handle. */
int lmdx_port_send_wait(lmdx_port_send_t handle);

/* ---- Modules (docs/configuration.md#modules, docs/messages.md) ---------------------------------
 * The configuration may declare modules (P-RIO): each a named entry point run by a set of ranks,
 * with ports and links between them, and either sharing memory (under a protocol) or talking by
 * messages only. Every rank of the job is in one module then. Mismatches between the program and
 * the configuration (no modules, a port the module lacks, an unlinked port, a module with no
 * entry) are LMDX_ERR_CONFIG naming them; a module that does not share memory gets
 * LMDX_ERR_MISUSE from lmdx_malloc, lmdx_alloc_collective, lmdx_shared_var and lmdx_lookup. */
typedef struct lmdx_module_entry {
  const char* name;                   /* a module of the configuration */
  int (*main)(int argc, char** argv); /* what its ranks run */
} lmdx_module_entry;

/* This rank's module: its name (NULL without modules), this rank's index in it and the number of
 * its members (-1 without modules). Index i of a module is the i-th rank of its `ranks`. */
const char* lmdx_module_name(void);
int lmdx_module_rank(void);
int lmdx_module_size(void);
/* The job rank of member index of module (NULL: this rank's module). An unknown module or an
 * index outside it is LMDX_ERR_INVALID_ARGUMENT. */
int lmdx_module_member(const char* module, int index);
/* SPMD style: runs this rank's module's entry with the program's arguments (as given to
 * lmdx_init_spmd) and returns its status. entries ends with {NULL, NULL} and must hold every
 * module of the configuration (others are ignored); one missing is LMDX_ERR_CONFIG naming it, on
 * every rank. */
int lmdx_run_modules(const lmdx_module_entry* entries);
/* "<module>.<port>": the port name under which this module opens its port (lmdx_port_open);
 * NULL on failure (the module has no such port). Valid until the process ends. */
const char* lmdx_module_port(const char* port);
/* Where this module's port is linked: the linked module's port name ("<module>.<port>", NULL on
 * failure), the number of the linked module's members, and the job rank of its member index
 * (outside the module: LMDX_ERR_INVALID_ARGUMENT). A port with no link from it is
 * LMDX_ERR_CONFIG. A C program sends on a link with
 * lmdx_port_send(lmdx_link_member(port, i), lmdx_link_port(port), type, bytes, len). */
const char* lmdx_link_port(const char* port);
int lmdx_link_size(const char* port);
int lmdx_link_member(const char* port, int index);

/* Synchronisation across nodes: named barriers, counting semaphores and locks. Names are the
 * interface: every thread of every node that uses the same name uses the same object. Each name
 * has a manager node chosen by hashing it. A name is one kind of object for the whole job.
 * Blocking calls block only the calling thread. Misuse is LMDX_ERR_MISUSE, with a text naming the
 * object and the rank. */

/* Barriers: count is the number of participating threads, wherever they run; the barrier is
 * reusable. Every node that uses a barrier may call init (with the same count); init must happen
 * before the first use reaches the manager (the simplest: every user calls init first). */
int lmdx_barrier_init(const char* name, int count);
int lmdx_barrier(const char* name);
/* All ranks, one thread each (SPMD style): a tree over the nodes, O(log N) steps. */
int lmdx_barrier_all(void);

/* Counting semaphores; waiters are served first come, first served. */
int lmdx_sema_init(const char* name, int value);
int lmdx_sema_p(const char* name);
int lmdx_sema_v(const char* name);

/* Locks (not recursive). lmdx_trylock returns 0 when it acquired the lock, 1 when it is busy. */
int lmdx_lock(const char* name);
int lmdx_unlock(const char* name);
int lmdx_trylock(const char* name);

/* Handles: a name looked up once, for hot paths. Valid until lmdx_finalize. NULL on failure. */
typedef struct lmdx_barrier_object* lmdx_barrier_t;
typedef struct lmdx_sema_object* lmdx_sema_t;
typedef struct lmdx_lock_object* lmdx_lock_t;

lmdx_barrier_t lmdx_barrier_find(const char* name);
lmdx_sema_t lmdx_sema_find(const char* name);
lmdx_lock_t lmdx_lock_find(const char* name);

int lmdx_barrier_init_h(lmdx_barrier_t barrier, int count);
int lmdx_barrier_h(lmdx_barrier_t barrier);
int lmdx_sema_init_h(lmdx_sema_t sema, int value);
int lmdx_sema_p_h(lmdx_sema_t sema);
int lmdx_sema_v_h(lmdx_sema_t sema);
int lmdx_lock_h(lmdx_lock_t lock);
int lmdx_unlock_h(lmdx_lock_t lock);
int lmdx_trylock_h(lmdx_lock_t lock);

/* MDX spelling: the bare identifier is the name, LMDX_lock(L) locks "L". */
#define LMDX_barrier_init(B, count) lmdx_barrier_init(#B, (count))
#define LMDX_barrier(B) lmdx_barrier(#B)
#define LMDX_sema_init(S, value) lmdx_sema_init(#S, (value))
#define LMDX_sema_P(S) lmdx_sema_p(#S)
#define LMDX_sema_V(S) lmdx_sema_v(#S)
#define LMDX_lock(L) lmdx_lock(#L)
#define LMDX_unlock(L) lmdx_unlock(#L)
#define LMDX_trylock(L) lmdx_trylock(#L)

/* ---- Groups (docs/groups.md) ---------------------------------------------------------------
 * A named, ordered set of ranks. A member's position in the list is its index in the group.
 * Collectives run over trees and pairwise exchanges, so no node sends N messages for a group of
 * N. Every member calls a group's collectives in the same order (one thread per member at a time);
 * each call carries its number in the group, so consecutive collectives never mix, and data that
 * arrives before a member's call waits for it. Misuse is LMDX_ERR_MISUSE naming the group and
 * the rank. Handles are valid until lmdx_finalize. */
typedef struct lmdx_group_object* lmdx_group_t;

/* Every member calls it with the same ranks in the same order; it returns once every member has.
 * A rank may also name a group it is not in (its index is then -1). A rank out of range or listed
 * twice is LMDX_ERR_INVALID_ARGUMENT; another list than another caller's is LMDX_ERR_MISUSE for
 * every caller of the name. NULL on failure. */
lmdx_group_t lmdx_group_create(const char* name, const int* ranks, int count);
int lmdx_group_size(lmdx_group_t group);
/* This rank's index in the group, or -1 when it is not a member. */
int lmdx_group_rank(lmdx_group_t group);

/* Sends len bytes to every other member; returns when buf may be reused. Not a collective: any
 * member may send at any time. Messages of one sender arrive in the order it sent them. */
int lmdx_group_send(lmdx_group_t group, const void* buf, size_t len);
/* Receives the next message another member sent to the group (status->source is its rank). A
 * message longer than cap is LMDX_ERR_TRUNCATED and stays queued. status may be NULL. */
int lmdx_group_recv(lmdx_group_t group, void* buf, size_t cap, lmdx_status* status);

/* Collectives: every member calls them with the same root index and lengths. */
/* The root's len bytes of buf, into buf on every member. */
int lmdx_bcast(lmdx_group_t group, int root_index, void* buf, size_t len);
/* Every member's len bytes of send, into recv at the root in index order (len * size bytes; recv
 * is not used elsewhere and may be NULL there). */
int lmdx_gather(lmdx_group_t group, int root_index, const void* send, size_t len, void* recv);
/* send and recv hold len_per_member * size bytes: block j of send goes to member j, block j of
 * recv comes from member j. */
int lmdx_alltoall(lmdx_group_t group, const void* send, size_t len_per_member, void* recv);

/* ---- Shared memory -------------------------------------------------------------------------
 * One global range, at the same address on every node: a pointer into it means the same data on
 * every node, read and written with ordinary loads and stores (the protocol brings pages on a
 * fault). Pass shared buffers to system calls only through lmdx_get/lmdx_put copies: the kernel
 * does not fault pages in on LMDX's behalf. */

/* A block of shared memory from this node's slice of the shared heap; freed by lmdx_free from any
 * node. NULL (LMDX_ERR_NO_MEMORY) when the slice is full. */
void* lmdx_malloc(size_t bytes);
/* Frees a block of lmdx_malloc from any node; NULL is ignored. Anything else is LMDX_ERR_MISUSE
 * (fatal by default; in LMDX_ERRORS_RETURN mode, read it with lmdx_last_error()). */
void lmdx_free(void* block);
/* SPMD: every rank calls it in the same order with the same size; all get the same pointer. */
void* lmdx_alloc_collective(size_t bytes);
/* The named shared variable `name` of `bytes` bytes (zeros at first), created by the first call on
 * any node; every call with that name returns the same address. Another size is LMDX_ERR_MISUSE.
 * Its protocol and home distribution come from the configuration (docs/configuration.md). */
void* lmdx_shared_var(const char* name, size_t bytes);
/* The variable called name and its size, or NULL (no error) when there is none yet. */
void* lmdx_lookup(const char* name, size_t* bytes);
/* Copies between private and shared memory through the protocol, without page faults. */
int lmdx_get(void* destination, const void* shared_source, size_t bytes);
int lmdx_put(void* shared_destination, const void* source, size_t bytes);
/* read(2) and write(2) for buffers anywhere, shared memory included. The kernel does not fault
 * shared pages in: plain read(2) into shared pages this node may not write fails with EFAULT or
 * returns a short count (it stops at the first such page), and write(2) from pages it may not
 * read does the same. These stage through private memory and lmdx_put/lmdx_get. lmdx_read reads
 * until bytes, the end of the file, or a short read of a pipe or socket; lmdx_write writes all
 * bytes. Both return the count, or -1 with errno (EFAULT for a buffer that runs out of shared
 * memory, which is also an LMDX error in the error mode); a private buffer is plain read/write. */
ssize_t lmdx_read(int fd, void* buffer, size_t bytes);
ssize_t lmdx_write(int fd, const void* buffer, size_t bytes);
/* 1 when address lies in the shared range, else 0. */
int lmdx_is_shared(const void* address);
/* The consistency protocol that keeps address coherent ("sc", "update", "rc", "lrc" or "hlrc"), as
 * the configuration chose it for the variable or heap holding it; NULL (LMDX_ERR_INVALID_ARGUMENT)
 * when address is not in a shared variable or heap block. */
const char* lmdx_protocol_of(const void* address);

/* A file-scope shared variable: lmdxpp's output for `LMDX_shared T name[dims];` calls it from a
 * constructor, before main. Every node creates or finds the variable `name` (as lmdx_shared_var)
 * while lmdx_init starts it and calls bind with its address; registrations after lmdx_init are
 * bound at once. A rank whose module does not share memory binds nothing. */
int lmdx_register_shared(const char* name, size_t bytes, void (*bind)(void* address));

/* MDX spelling: LMDX_make_dsm(double, grid) is a double* to the shared variable "grid". */
#define LMDX_make_dsm(T, name) ((T*)lmdx_shared_var(#name, sizeof(T)))
#define LMDX_get_dsm(destination, shared_source, bytes) \
  lmdx_get((destination), (shared_source), (bytes))
#define LMDX_put_dsm(shared_destination, source, bytes) \
  lmdx_put((shared_destination), (source), (bytes))
#define LMDX_malloc(bytes) lmdx_malloc(bytes)
#define LMDX_freemem(block) lmdx_free(block)

/* ---- LMDX threads ----------------------------------------------------------------------------
 * Functions of the program started on any node of the job, as user-level threads of that node
 * (docs/threads.md). Any function of the program can be started: every node runs the same
 * executable. `arg` is passed unchanged, so it should point into shared memory or carry a number.
 * A thread blocked in LMDX (lock, barrier, semaphore, receive, join) lets another thread of its
 * node run. */
typedef uint64_t lmdx_thread_t;
#define LMDX_THREAD_INVALID ((lmdx_thread_t)UINT64_MAX)
/* The result of a killed thread. */
#define LMDX_KILLED ((void*)(intptr_t)-1)

/* Starts fn(arg) on the node the placement policy chooses (round-robin by default); joinable.
 * LMDX_THREAD_INVALID on failure. */
lmdx_thread_t lmdx_start_thread(void* (*fn)(void*), void* arg);
/* The same, detached: nobody joins it. */
lmdx_thread_t lmdx_start_dthread(void* (*fn)(void*), void* arg);
/* The same on a given node (rank). */
lmdx_thread_t lmdx_start_thread_on(int node, void* (*fn)(void*), void* arg);
/* Waits for the thread to end, from any node, and returns its result (NULL on failure: check
 * lmdx_last_error() in LMDX_ERRORS_RETURN mode). Joining a detached or already joined thread is
 * LMDX_ERR_MISUSE. */
void* lmdx_join_thread(lmdx_thread_t thread);
/* Ends the thread at its next call into LMDX, with LMDX_KILLED as its result. */
int lmdx_kill_thread(lmdx_thread_t thread);
/* Ends the calling LMDX thread with result; returns (LMDX_ERR_MISUSE) only outside one. */
int lmdx_exit_thread(void* result);
/* The oldest joinable thread this node started from fn and has not joined yet: MDX names threads
 * by their function (LMDX_join_thread(prod) in lmdxpp's dialect). LMDX_THREAD_INVALID
 * (LMDX_ERR_MISUSE) when there is none. */
lmdx_thread_t lmdx_thread_started_from(void* (*fn)(void*));
/* The calling thread's id (a node's main thread has one too). */
lmdx_thread_t lmdx_thread_self(void);
/* The node a thread runs on. */
int lmdx_thread_node(lmdx_thread_t thread);

#define LMDX_start_thread(fn, arg) lmdx_start_thread((fn), (arg))
#define LMDX_start_dthread(fn, arg) lmdx_start_dthread((fn), (arg))
#define LMDX_join_thread(t) lmdx_join_thread(t)
#define LMDX_kill_thread(t) lmdx_kill_thread(t)
#define LMDX_exit_thread(result) lmdx_exit_thread(result)

/* ---- Tasks ------------------------------------------------------------------------------------
 * Functions spawned with a copy of their arguments; the runtime runs them on any node and balances
 * the load (docs/tasks.md). A spawn is a release and the task's start an acquire; a task's end is
 * a release and the lmdx_wait that covers it an acquire, so a task reads what its spawner wrote
 * before the spawn, and the waiter what its tasks wrote, under every protocol. Works from SPMD
 * main, from LMDX threads and from tasks (nested spawns). */

/* Arguments larger than this are LMDX_ERR_INVALID_ARGUMENT: pass a pointer to shared memory. */
#define LMDX_TASK_MAX_ARGS ((size_t)1 << 20)

/* Runs fn on some node with a copy of the size bytes at args; when it ends, its (possibly
 * changed) copy is written back over args on the spawning node before the spawner's next
 * lmdx_wait returns. args must stay valid until then. */
int lmdx_spawn(void (*fn)(void* args), void* args, size_t size);
/* The same, but the task's copy is not written back: args may change or go as soon as the call
 * returns (results travel through shared memory instead). */
int lmdx_spawn_copy(void (*fn)(void* args), const void* args, size_t size);
/* Waits until every task the calling task (or thread) spawned, and their descendants, has ended.
 * A task that waits runs other tasks meanwhile; a thread sleeps. A task waits for its own
 * children at its end in any case, so its spawner's wait covers them. */
int lmdx_wait(void);

/* A program's own placement of tasks: called at each spawn while this node has work queued
 * beyond what its runners can take; returns the node (rank) to run the task, or -1 to keep it.
 * loads[r] is how many tasks node r last said it had waiting (this node's is exact). */
typedef int (*lmdx_task_placement_fn)(void* state, int rank, int size, const uint64_t* loads);
/* Switches the calling node to that placement (NULL: back to work stealing); other nodes keep
 * their scheduler. */
int lmdx_set_task_scheduler(lmdx_task_placement_fn place, void* state);

/* The dialect's spellings, as for threads. lmdxpp turns `LMDX_task f(struct a *p)` into
 * `void f(struct a *p)` and every call `f(&x)` into `lmdx_spawn_task(f, &x)`: a spawn on a copy
 * of *(&x), written back at the caller's next LMDX_wait(). */
#define LMDX_spawn(fn, args, size) lmdx_spawn((fn), (args), (size))
#define LMDX_wait() lmdx_wait()
#define lmdx_spawn_task(fn, args) lmdx_spawn((void (*)(void*))(fn), (args), sizeof *(args))

/* Ends the whole job now with the given status and message (printed by this rank). */
void lmdx_abort(int status, const char* message);

#ifdef __cplusplus
}
#endif

#endif /* LMDX_LMDX_H_ */
