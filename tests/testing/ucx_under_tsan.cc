// ThreadSanitizer's settings for a test that drives UCX, linked into it only in TSan builds.
//
// UCX is not instrumented, and the order it puts between two threads goes through memory the
// two share with atomics TSan does not see, or through a socket's two ends. A node's progress
// thread that copies exposed memory for a peer's get (a memcpy called from libucp) then races,
// for TSan, with the thread that frees that memory once its get came back. So TSan does not
// watch what UCX's libraries call (called_from_lib); LMDX's own code around them it still
// watches, callbacks included.
//
// With the calls from libucs unwatched, its lock taken at start-up is never seen, and its
// unlock in the library's destructor at exit reads as an unlock of an unlocked mutex: mutex
// misuse is not reported in these tests (report_mutex_bugs=0), races and lock-order inversions
// still are.

// NOLINTNEXTLINE(bugprone-reserved-identifier): the runtime's name for it
extern "C" const char* __tsan_default_options() { return "report_mutex_bugs=0"; }

// NOLINTNEXTLINE(bugprone-reserved-identifier)
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libucp.so.0\n"
         "called_from_lib:libuct.so.0\n"
         "called_from_lib:libucs.so.0\n";
}
