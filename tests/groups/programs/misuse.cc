// Every misuse of a group is reported with its code and a text naming the group and the rank.
// "return" (4 ranks): LMDX_ERRORS_RETURN, each case checked; prints "rank R: N misuse cases
// reported". "fatal" (2 ranks or more): ranks 0 and 1 create one group with different member
// lists in the default mode, which must end the job with that message.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/groups/programs/common.h"

namespace {

using group_checks::Check;
using group_checks::Die;
using group_checks::Ok;

int checked = 0;

void Expect(int code, int expected, const std::vector<std::string>& parts, const char* what) {
  std::string text = lmdx_last_error_message();
  if (code != expected) {
    Die(std::string(what) + ": code " + std::to_string(code) + ", expected " +
        std::to_string(expected) + " (" + text + ")");
  }
  for (const auto& part : parts) {
    if (text.find(part) == std::string::npos) {
      std::string problem = what;
      problem += ": \"" + text + "\" does not say \"";
      problem += part;
      problem += '"';
      Die(problem);
    }
  }
  std::printf("rank %d: %s: %s\n", lmdx_rank(), what, text.c_str());
  ++checked;
}

// A create that must fail: returns NULL and leaves the code in lmdx_last_error.
int FailedCreate(const char* name, const std::vector<int>& ranks) {
  lmdx_group_t group = lmdx_group_create(name, ranks.data(), static_cast<int>(ranks.size()));
  Check(group == nullptr,
        std::string("lmdx_group_create(\"") + (name ? name : "NULL") + "\") should have failed");
  return lmdx_last_error();
}

lmdx_group_t Create(const char* name, const std::vector<int>& ranks) {
  lmdx_group_t group = lmdx_group_create(name, ranks.data(), static_cast<int>(ranks.size()));
  Check(group != nullptr,
        std::string("lmdx_group_create(\"") + name + "\"): " + lmdx_last_error_message());
  return group;
}

void ReturnMode() {
  lmdx_set_error_mode(LMDX_ERRORS_RETURN);
  const int rank = lmdx_rank();
  Check(lmdx_size() == 4, "the return mode runs on 4 ranks");
  const std::string me = "rank " + std::to_string(rank);
  std::uint8_t in[64] = {}, out[64] = {};

  // Arguments, checked before any message.
  Expect(FailedCreate("dup", {0, 1, 1}), LMDX_ERR_INVALID_ARGUMENT,
         {"lmdx_group_create: group \"dup\": rank 1 is listed twice (indices 1 and 2)"},
         "a rank listed twice");
  Expect(FailedCreate("out", {0, 7}), LMDX_ERR_INVALID_ARGUMENT,
         {"lmdx_group_create: group \"out\": member 7 is not a rank of this job (0 to 3)"},
         "a rank out of range");
  Expect(FailedCreate("none", {}), LMDX_ERR_INVALID_ARGUMENT,
         {"group \"none\"", "a group has at least one member"}, "no members");
  Expect(FailedCreate(nullptr, {0}), LMDX_ERR_INVALID_ARGUMENT,
         {"lmdx_group_create: the group name is NULL"}, "no name");
  Expect(lmdx_bcast(nullptr, 0, in, 1), LMDX_ERR_INVALID_ARGUMENT,
         {"lmdx_bcast: the group handle is NULL"}, "no handle");
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");

  // Different member lists: ranks 0 and 1 pass [0, 1, 2], rank 2 passes [0, 2, 1]. Every caller
  // of the name hears of it, now and later.
  const std::vector<std::string> mixed = {"lmdx_group_create: group \"mixed\": rank ",
                                          " passes the members ", "[0, 1, 2]", "[0, 2, 1]"};
  if (rank <= 2) {
    std::vector<int> list = rank == 2 ? std::vector<int>{0, 2, 1} : std::vector<int>{0, 1, 2};
    Expect(FailedCreate("mixed", list), LMDX_ERR_MISUSE, mixed, "different member lists");
    Expect(FailedCreate("mixed", list), LMDX_ERR_MISUSE, mixed, "different member lists, again");
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  if (rank == 3) {
    Expect(FailedCreate("mixed", {0, 1, 2}), LMDX_ERR_MISUSE, mixed,
           "a later caller of a broken group");
  }

  // One node, two lists for one name.
  if (rank <= 1) {
    lmdx_group_t twice = Create("twice", {0, 1});
    Check(Create("twice", {0, 1}) == twice, "creating a group again gives the same handle");
    Expect(FailedCreate("twice", {1, 0}), LMDX_ERR_MISUSE,
           {"lmdx_group_create: group \"twice\" was created on " + me +
            " with the members [0, 1]; this call passes [1, 0]"},
           "another list on the same node");
  }

  // Non-members: every rank names "evens"; the odd ranks' index is -1 and any call is misuse.
  lmdx_group_t evens = Create("evens", {0, 2});
  Check(lmdx_group_size(evens) == 2, "the size of evens");
  Check(lmdx_group_rank(evens) == (rank % 2 == 0 ? rank / 2 : -1), "the index in evens");
  if (rank % 2 == 1) {
    const std::string not_member = me + " is not a member of group \"evens\" [0, 2]";
    lmdx_status status{};
    Expect(lmdx_bcast(evens, 0, in, 8), LMDX_ERR_MISUSE, {"lmdx_bcast: " + not_member},
           "bcast by a non-member");
    Expect(lmdx_gather(evens, 0, out, 8, in), LMDX_ERR_MISUSE, {"lmdx_gather: " + not_member},
           "gather by a non-member");
    Expect(lmdx_alltoall(evens, out, 8, in), LMDX_ERR_MISUSE, {"lmdx_alltoall: " + not_member},
           "alltoall by a non-member");
    Expect(lmdx_group_send(evens, out, 8), LMDX_ERR_MISUSE, {"lmdx_group_send: " + not_member},
           "group send by a non-member");
    Expect(lmdx_group_recv(evens, in, 8, &status), LMDX_ERR_MISUSE,
           {"lmdx_group_recv: " + not_member}, "group receive by a non-member");
  } else {
    Expect(lmdx_bcast(evens, 2, in, 8), LMDX_ERR_INVALID_ARGUMENT,
           {"lmdx_bcast: root index 2 is not an index of group \"evens\" (0 to 1)"},
           "a root out of range");
    Expect(lmdx_gather(evens, -1, out, 8, in), LMDX_ERR_INVALID_ARGUMENT,
           {"lmdx_gather: root index -1 is not an index of group \"evens\" (0 to 1)"},
           "a negative root");
    // Refused calls take no collective number: the next one matches on both members.
    std::uint64_t value = rank == 0 ? 0x1234567890abcdefull : 0;
    Ok(lmdx_bcast(evens, 0, &value, sizeof value), "lmdx_bcast");
    Check(value == 0x1234567890abcdefull, "the bcast after refused calls");
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");

  // Members that disagree, in group "pair" [0, 1].
  if (rank <= 1) {
    lmdx_group_t pair = Create("pair", {0, 1});
    // Collective 0: rank 1 broadcasts from itself, then rank 0 calls an all-to-all.
    if (rank == 1) {
      Ok(lmdx_bcast(pair, 1, out, 8), "lmdx_bcast");
      Ok(lmdx_send(0, out, 1), "lmdx_send");
    } else {
      lmdx_status status{};
      Ok(lmdx_recv(1, in, sizeof in, &status), "lmdx_recv");
      Expect(lmdx_alltoall(pair, out, 8, in), LMDX_ERR_MISUSE,
             {"lmdx_alltoall: group \"pair\": collective 0 is lmdx_alltoall on rank 0 but "
              "lmdx_bcast on rank 1"},
             "different collectives");
    }
    // Collective 1: a broadcast whose members disagree on the length.
    if (rank == 0) {
      Ok(lmdx_bcast(pair, 0, out, 8), "lmdx_bcast");
    } else {
      Expect(lmdx_bcast(pair, 0, in, 16), LMDX_ERR_MISUSE,
             {"lmdx_bcast: group \"pair\": collective 1: lmdx_bcast has 16 bytes on rank 1 but 8 "
              "on the root, rank 0"},
             "different lengths");
    }
    // The group goes on.
    std::uint64_t value = rank == 0 ? 42 : 0;
    Ok(lmdx_bcast(pair, 0, &value, sizeof value), "lmdx_bcast");
    Check(value == 42, "the bcast after the mismatches");
    // A message longer than the receive buffer stays queued for a larger one.
    if (rank == 0) {
      group_checks::Fill(out, 50, 9, 0);
      Ok(lmdx_group_send(pair, out, 50), "lmdx_group_send");
    } else {
      lmdx_status status{};
      Expect(lmdx_group_recv(pair, in, 10, &status), LMDX_ERR_TRUNCATED,
             {"lmdx_group_recv: the message from rank 0 to group \"pair\" is 50 bytes, longer "
              "than the receive buffer of 10 bytes; it stays queued"},
             "a receive buffer too small");
      Ok(lmdx_group_recv(pair, in, sizeof in, &status), "lmdx_group_recv");
      Check(status.source == 0 && status.length == 50, "the queued message");
      group_checks::Expect(in, 50, 9, 0, "the queued message");
    }
  }
  Ok(lmdx_barrier_all(), "lmdx_barrier_all");
  std::printf("rank %d: %d misuse cases reported\n", rank, checked);
}

void FatalMode() {
  if (lmdx_rank() <= 1) {
    std::vector<int> list = lmdx_rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0};
    lmdx_group_create("mixed", list.data(), 2);
    std::printf("rank %d: the mismatch went unnoticed\n", lmdx_rank());
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmdx_init_spmd(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "return") {
    ReturnMode();
  } else if (mode == "fatal") {
    FatalMode();
  } else {
    Die("usage: misuse return|fatal");
  }
  std::fflush(stdout);
  lmdx_finalize();
  return 0;
}
