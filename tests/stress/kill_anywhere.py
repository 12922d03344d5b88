#!/usr/bin/env python3
"""Kill anywhere: SIGKILL a random rank (sometimes two, sometimes the launcher) of a running job
at a random moment, and check that the job ends within the bound, names the rank and the cause,
and leaves nothing behind: no process, shared-memory file, socket or temporary file.

Usage: tests/stress/kill_anywhere.py [--runs N] [--seed S] [--bound SECONDS] [--verbose]
Run from the repository after ./lmdx build (it uses bazel-bin/). Prints one line per failure, a
summary and a last line "N passed, N failed" over the runs; exits 1 when any run failed. docs/hardening.md says what each check means.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time

from job_processes import node_pids

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BIN = os.path.join(ROOT, "bazel-bin")

# (kind, program, arguments): each runs for a few seconds on this machine, long enough to be hit
# in mid-flight, and each exercises one part of LMDX.
PROGRAMS = [
    ("dsm", "samples/jacobi/jacobi", ["--size", "512", "--iterations", "3000"]),
    ("dsm-threads", "samples/jacobi/jacobi",
     ["--size", "512", "--iterations", "3000", "--workers", "4"]),
    ("sync", "tests/sync/mutex", ["2", "100000"]),
    ("sync", "tests/sync/barrier", ["named", "20000", "2"]),
    ("threads", "tests/threads/threads_checks", ["many", "20000"]),
    ("threads", "samples/prodcons/prodcons", []),
    ("messages", "samples/jacobi/jacobi_msg", ["--size", "512", "--iterations", "8000"]),
]
PROTOCOLS = ["sc", "update", "rc", "lrc", "hlrc"]


def environment_of(pid, name):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(name.encode() + b"="):
                    return entry[len(name) + 1:].decode(errors="replace")
    except OSError:
        pass
    return None


def rank_of(pid):
    try:
        return int(environment_of(pid, "LMDX_RANK"))
    except (TypeError, ValueError):
        return None


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has ended; only its parent's wait is missing.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] != "Z"
    except OSError:
        return False


def resources():
    """What a job could leave behind, by name: shared-memory files, Unix sockets (abstract ones
    included) and temporary files whose names say LMDX. A run counts those that carry its job
    id (LMDX_JOB_ID), which every name a job makes includes."""
    found = set()
    for folder in ("/dev/shm", "/tmp"):
        try:
            found |= {f"{folder}/{n}" for n in os.listdir(folder) if "lmdx" in n.lower()}
        except OSError:
            pass
    try:
        with open("/proc/net/unix") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if len(fields) >= 8 and "lmdx" in fields[7].lower():
                    found.add("unix:" + fields[7])
    except OSError:
        pass
    return found


class Failure(Exception):
    pass


def one_run(rng, bound, verbose, bin_dir):
    kind, program, args = rng.choice(PROGRAMS)
    nodes = rng.choice([2, 3, 4])
    env = dict(os.environ)
    env["LMDX_PROTOCOL"] = rng.choice(PROTOCOLS)
    before = resources()
    launcher = subprocess.Popen([os.path.join(bin_dir, "tools", "lmdx"), "run", "-n", str(nodes),
                                 os.path.join(bin_dir, program), "--"]
                                + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True)
    time.sleep(rng.uniform(0.05, 1.5))
    # Every node, once started: a kill before the launcher has started them all hits fewer.
    ranks = {}
    seen_until = time.monotonic() + 2
    while launcher.poll() is None and time.monotonic() < seen_until:
        for pid in node_pids(launcher.pid):
            rank = rank_of(pid)
            if rank is not None:
                ranks[rank] = pid
        if len(ranks) == nodes:
            break
        time.sleep(0.01)
    nodes_seen = set(ranks.values())
    # What this job made carries its id; other jobs running meanwhile are not its leftovers.
    job_ids = {environment_of(pid, "LMDX_JOB_ID") for pid in nodes_seen} - {None}
    action = rng.random()
    if launcher.poll() is not None or not ranks:
        victims, target = [], "nothing (the job had ended)"
    elif action < 0.1:
        victims, target = [launcher.pid], "the launcher"
    elif action < 0.25 and len(ranks) >= 2:
        chosen = rng.sample(sorted(ranks), 2)
        victims, target = [ranks[r] for r in chosen], f"ranks {chosen[0]} and {chosen[1]}"
    else:
        chosen = [rng.choice(sorted(ranks))]
        victims, target = [ranks[chosen[0]]], f"rank {chosen[0]}"
    killed_ranks = [r for r, p in ranks.items() if p in victims]
    killed_at = time.monotonic()
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    what = f"{kind} {os.path.basename(program)} on {nodes} nodes ({env['LMDX_PROTOCOL']}), " \
           f"killed {target}"
    # A job nobody killed ends on its own, in its own time.
    limit = bound + 5 if victims else 300
    try:
        out, err = launcher.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.communicate()
        raise Failure(f"{what}: the launcher did not end within {limit} s")
    took = time.monotonic() - killed_at
    err = err.decode(errors="replace")
    # Every node ends too (a killed launcher's nodes die of their parent-death signal).
    deadline = time.monotonic() + bound
    while any(alive(p) for p in nodes_seen) and time.monotonic() < deadline:
        time.sleep(0.02)
    took = max(took, time.monotonic() - killed_at)
    left = [p for p in nodes_seen if alive(p)]
    if left:
        for p in left:
            os.kill(p, signal.SIGKILL)
        raise Failure(f"{what}: node processes {left} still ran {bound} s after the kill")
    if took > bound:
        raise Failure(f"{what}: the job took {took:.1f} s to end (bound {bound} s)")
    if killed_ranks:
        if launcher.returncode == 0:
            raise Failure(f"{what}: the launcher exited 0")
        named = re.search(r"lmdx run: rank (\d+) (died|exited)", err)
        if not named or int(named.group(1)) not in killed_ranks:
            raise Failure(f"{what}: the launcher's message does not name a killed rank:\n{err}")
        if "SIGKILL" not in err:
            raise Failure(f"{what}: the message does not name the cause (SIGKILL):\n{err}")
    # What the job made must be gone: allow the kernel a moment to drop a dead process's sockets.
    deadline = time.monotonic() + 2
    while True:
        leaked = {r for r in resources() - before if any(job in r for job in job_ids)}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if leaked:
        raise Failure(f"{what}: left behind {sorted(leaked)}")
    if verbose:
        print(f"ok: {what}: ended in {took:.2f} s", flush=True)
    return took if victims else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--bound", type=float, default=5.0, help="seconds a job may take to end")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--bin", default=DEFAULT_BIN,
                        help="Bazel's output folder to take the binaries from (default bazel-bin, "
                             "which follows the last build's configuration)")
    options = parser.parse_args()
    bin_dir = os.path.realpath(options.bin)
    lmdx = os.path.join(bin_dir, "tools", "lmdx")
    if options.runs < 1:
        parser.error("--runs needs at least 1")
    if not os.access(lmdx, os.X_OK):
        sys.exit(f"kill_anywhere: {lmdx} is not built; run ./lmdx build first")
    for _, program, _ in PROGRAMS:
        if not os.access(os.path.join(bin_dir, program), os.X_OK):
            sys.exit(f"kill_anywhere: {bin_dir}/{program} is not built; run ./lmdx build first")
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    failures = 0
    untouched = 0
    times = []
    for run in range(options.runs):
        try:
            took = one_run(rng, options.bound, options.verbose, bin_dir)
            if took is None:
                untouched += 1
            else:
                times.append(took)
        except Failure as failure:
            failures += 1
            print(f"FAILED run {run + 1}: {failure}", flush=True)
    times.sort()
    if times:
        print(f"kill_anywhere: {options.runs} runs (seed {seed}), {failures} failed, {untouched} "
              f"ended before the kill; the job ended a median {times[len(times) // 2]:.2f} s and "
              f"at most {times[-1]:.2f} s after the kill")
    else:
        print(f"kill_anywhere: {options.runs} runs (seed {seed}), {failures} failed")
    print(f"{options.runs - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
