// The module API between real nodes. argv[1] picks the scenario; each rank prints what it saw as
// "rank R ..." lines (errors as "rank R error CODE: TEXT"), and the test compares them.
//   info:     (modules.conf) this rank's module, index and size, members, port names, links.
//   links:    (modules.conf) messages over links to one member and to all, replies back, then
//             (errors returned) an index outside the linked module, an unlinked port, a port the
//             module lacks, an unknown module.
//   memory:   (modules.conf) the master's shared-memory calls are LMDX_ERR_MISUSE naming its
//             module; the workers' work and their variable is shared among them.
//   malloc-fatal: (modules.conf) the master calls lmdx_malloc in the default error mode.
//   protocol: (lrc.conf) a module asking for lrc: its variables take it, its heap memory fails
//             naming it (the heap runs dsm.protocol), a region naming sc wins.
//   entries:  (modules.conf) lmdx_run_modules with bad tables.
//   run:      (modules.conf) lmdx_run_modules runs each rank's entry with the arguments; the
//             master's entry returns 7.
//   none:     (no configuration) no module; the calls that need one fail.
//   threads:  (solo.conf) lmdx_run_modules after lmdx_init (threads style).
//   singleton: (run with no launcher) lmdx_init_spmd only.
#include <lmdx/lmdx.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lmdx/lmdx.hpp>
#include <string>
#include <vector>

#include "tests/modules/test_modules.pb.h"

namespace {

using lmdx::test::modules::Item;
using lmdx::test::modules::Reply;

void Say(const std::string& text) {
  std::printf("rank %d %s\n", lmdx_rank(), text.c_str());
  std::fflush(stdout);
}

[[noreturn]] void Mismatch(const std::string& what) {
  std::string text = "rank " + std::to_string(lmdx_rank()) + ": MISMATCH: " + what;
  lmdx_abort(2, text.c_str());
  std::abort();
}

void Expect(bool condition, const std::string& what) {
  if (!condition) Mismatch(what);
}

// The last error of a C call that returned code (or NULL).
void SayError(int code = lmdx_last_error()) {
  Say("error " + std::to_string(code) + ": " + lmdx_last_error_message());
}

// Runs a C++ call that must throw lmdx::error and reports it.
template <typename Call>
void SayThrown(Call call) {
  try {
    call();
  } catch (const lmdx::error& error) {
    Say("error " + std::to_string(error.code()) + ": " + error.what());
    return;
  }
  Mismatch("no error");
}

std::string Str(const char* text) { return text != nullptr ? text : "(null)"; }

bool IsMaster() { return lmdx::module_name() == "master"; }

void Info() {
  Say("module " + Str(lmdx_module_name()) + " index " + std::to_string(lmdx_module_rank()) +
      " of " + std::to_string(lmdx_module_size()));
  if (IsMaster()) {
    Say("members workers " + std::to_string(lmdx_module_member("workers", 0)) + " " +
        std::to_string(lmdx_module_member("workers", 1)) + " " +
        std::to_string(lmdx_module_member("workers", 2)) + ", own " +
        std::to_string(lmdx_module_member(nullptr, 0)));
    Say("port " + Str(lmdx_module_port("results_in")) + ", link work_out -> " +
        Str(lmdx_link_port("work_out")) + " size " + std::to_string(lmdx_link_size("work_out")) +
        " member 2 = " + std::to_string(lmdx_link_member("work_out", 2)));
  } else {
    Say("port " + Str(lmdx_module_port("work_in")) + ", link results_out -> " +
        Str(lmdx_link_port("results_out")) + " size " +
        std::to_string(lmdx_link_size("results_out")));
  }
}

void Links() {
  if (IsMaster()) {
    auto results = lmdx::module_port<Reply>("results_in");
    auto work = lmdx::link<Item>("work_out");
    Expect(work.size() == 3 && work.to() == "workers.work_in", "link " + work.to());
    for (int i = 0; i < work.size(); ++i) {
      Item item;
      item.set_id(i);
      work.send(i, item);
    }
    Item everyone;
    everyone.set_id(100);
    work.send_all(everyone);
    std::vector<int> from(3, -1);
    for (int i = 0; i < 3; ++i) {
      auto [reply, source] = results.recv();
      Expect(reply.rank() == source, "reply rank " + std::to_string(reply.rank()));
      Expect(lmdx_module_member("workers", reply.id()) == source,
             "reply " + std::to_string(reply.id()) + " from " + std::to_string(source));
      from[static_cast<std::size_t>(reply.id())] = source;
    }
    Say("replies from " + std::to_string(from[0]) + " " + std::to_string(from[1]) + " " +
        std::to_string(from[2]));
    lmdx::set_error_mode(lmdx::errors::throw_exceptions);
    SayThrown([&] { work.send(3, everyone); });
    SayThrown([&] { work.send(-1, everyone); });
    SayThrown([] { lmdx::link<Reply>("results_in"); });
    SayThrown([] { lmdx::module_port<Item>("nope"); });
    SayThrown([] { lmdx::link<Item>("nope"); });
    SayThrown([] { lmdx::module_member("nobody", 0); });
    SayThrown([] { lmdx::module_member("workers", 3); });
  } else {
    auto work = lmdx::module_port<Item>("work_in");
    auto results = lmdx::link<Reply>("results_out");
    auto [first, source] = work.recv();
    Expect(source == 0 && first.id() == lmdx::module_rank(),
           "first item " + std::to_string(first.id()) + " from " + std::to_string(source));
    auto [second, again] = work.recv();
    Expect(again == 0 && second.id() == 100, "second item " + std::to_string(second.id()));
    Reply reply;
    reply.set_id(first.id());
    reply.set_rank(lmdx::rank());
    results.send(0, reply);
    Say("worked");
  }
}

void Memory() {
  if (IsMaster()) {
    lmdx_set_error_mode(LMDX_ERRORS_RETURN);
    Expect(lmdx_malloc(64) == nullptr, "lmdx_malloc gave memory");
    SayError();
    Expect(lmdx_shared_var("v", 64) == nullptr, "lmdx_shared_var gave memory");
    SayError();
    Expect(lmdx_alloc_collective(64) == nullptr, "lmdx_alloc_collective gave memory");
    SayError();
    Expect(lmdx_lookup("v", nullptr) == nullptr, "lmdx_lookup gave memory");
    SayError();
    SayThrown([] { lmdx::shared<int> value{"v"}; });
    return;
  }
  auto* block = static_cast<int*>(lmdx_malloc(64));
  Expect(block != nullptr, "a worker's lmdx_malloc failed");
  lmdx_free(block);
  auto* shared = static_cast<int*>(lmdx_shared_var("v", 64));
  Expect(shared != nullptr, "a worker's lmdx_shared_var failed");
  shared[lmdx::module_rank()] = 10 + lmdx::module_rank();
  lmdx_barrier_init("workers.wrote", lmdx::module_size());
  lmdx_barrier("workers.wrote");
  Expect(shared[0] == 10 && shared[1] == 11 && shared[2] == 12, "the workers' variable");
  Say("shared ok");
}

void MallocFatal() {
  if (IsMaster()) {
    lmdx_malloc(64);
    Mismatch("lmdx_malloc returned");
  }
}

void Protocol() {
  if (IsMaster()) return;
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  auto* plain = static_cast<volatile char*>(lmdx_shared_var("plain", 64));
  Expect(plain != nullptr, "a variable under the module's lrc");
  plain[lmdx_module_rank()] = 'x';
  Expect(plain[lmdx_module_rank()] == 'x', "a write to a variable under lrc");
  Say("lrc variable ok");
  Expect(lmdx_malloc(64) == nullptr, "heap memory under lrc");
  SayError();
  Expect(lmdx_shared_var("sc_var", 64) != nullptr, "the sc region failed");
  Say("sc region ok");
}

int EntryPrints(int argc, char** argv) {
  std::string args;
  for (int i = 0; i < argc; ++i) args += std::string(" ") + argv[i];
  Say("runs " + lmdx::module_name() + " with" + args.substr(args.find(' ', 1)));
  return IsMaster() ? 7 : 0;
}

void Entries() {
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  lmdx_module_entry master_only[] = {{"master", EntryPrints}, {nullptr, nullptr}};
  SayError(lmdx_run_modules(master_only));
  SayError(lmdx_run_modules(nullptr));
  lmdx_module_entry twice[] = {
      {"master", EntryPrints}, {"master", EntryPrints}, {nullptr, nullptr}};
  SayError(lmdx_run_modules(twice));
  lmdx_module_entry no_main[] = {{"workers", nullptr}, {"master", EntryPrints}, {nullptr, nullptr}};
  SayError(lmdx_run_modules(no_main));
}

void None() {
  Expect(lmdx_module_name() == nullptr && lmdx_module_rank() == -1 && lmdx_module_size() == -1,
         "a module without a configuration");
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  lmdx_module_entry entries[] = {{"master", EntryPrints}, {nullptr, nullptr}};
  SayError(lmdx_run_modules(entries));
  Expect(lmdx_link_port("work_out") == nullptr, "a link without modules");
  SayError();
  void* block = lmdx_malloc(64);
  Expect(block != nullptr, "lmdx_malloc without modules");
  lmdx_free(block);
  Say("no module");
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "threads") {
    lmdx_init(&argc, &argv);  // returns on rank 0 only
    lmdx_set_error_mode(LMDX_ERRORS_RETURN);
    Say("module " + Str(lmdx_module_name()));
    lmdx_module_entry entries[] = {{"solo", EntryPrints}, {nullptr, nullptr}};
    SayError(lmdx_run_modules(entries));
    return 0;
  }
  lmdx_init_spmd(&argc, &argv);
  if (scenario == "run") {
    lmdx_module_entry entries[] = {{"workers", EntryPrints},
                                   {"master", EntryPrints},
                                   {"unused", EntryPrints},
                                   {nullptr, nullptr}};
    int status = lmdx_run_modules(entries);
    lmdx_finalize();
    return status;
  }
  if (scenario == "info") Info();
  if (scenario == "links") Links();
  if (scenario == "memory") Memory();
  if (scenario == "malloc-fatal") MallocFatal();
  if (scenario == "protocol") Protocol();
  if (scenario == "entries") Entries();
  if (scenario == "none") None();
  if (scenario == "singleton") Say("singleton");
  lmdx_set_error_mode(LMDX_ERRORS_ARE_FATAL);
  lmdx_finalize();
  return 0;
}
