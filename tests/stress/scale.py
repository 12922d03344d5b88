#!/usr/bin/env python3
"""Scale on one machine: the sync, DSM and group programs at many nodes (64 by default, far more
processes than this machine has cores), each checked for its own "verified" output, with each
node's file descriptors and resident memory sampled while the job runs and the job's time.

Usage: tests/stress/scale.py [--nodes 8,16,32,64] [--bin DIR] [--timeout SECONDS] [--cases ...]
Run from the repository after ./lmdx build. Prints a table (one row per program and job size)
and a last line "N passed, N failed"; exits 1 when a job failed or did not verify.
"""

import argparse
import os
import subprocess
import sys
import threading
import time

from job_processes import node_pids

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, program, arguments, what a successful run prints, how many times: "nodes" or 1)
CASES = [
    ("hello", "samples/hello/hello", [], "received", 1),
    ("barrier_all", "tests/sync/barrier", ["all", "200"], "passed 200 rounds", "nodes"),
    ("named_barrier", "tests/sync/barrier", ["named", "100", "1"], "passed 100 rounds", "nodes"),
    ("mutex", "tests/sync/mutex", ["1", "6400"], "overlaps 0", 1),  # 6400 divides by 1..64 nodes
    ("groups", "tests/groups/patterns", ["4096"], "patterns ok", "nodes"),
    ("dsm_visibility", "tests/dsm/dsm_checks", ["visibility"], "verified: visibility", 1),
    ("dsm_jacobi", "samples/jacobi/jacobi", ["--size", "512", "--iterations", "10"], "verified", 1),
]


def sample(pid):
    """(open file descriptors, resident KiB) of a process, or None once it is gone."""
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return fds, int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def run_case(bin_dir, case, nodes, timeout):
    name, program, args, expected, times = case
    command = [os.path.join(bin_dir, "tools", "lmdx"), "run", "-n", str(nodes),
               os.path.join(bin_dir, program), "--"] + args
    start = time.monotonic()
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peaks = {}  # pid -> (fds, rss)
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            for pid in node_pids(launcher.pid):
                got = sample(pid)
                if got:
                    old = peaks.get(pid, (0, 0))
                    peaks[pid] = (max(old[0], got[0]), max(old[1], got[1]))
            stop.wait(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out, err = launcher.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        launcher.kill()
        out, err = launcher.communicate()
        timed_out = True
    seconds = time.monotonic() - start
    stop.set()
    watcher.join()
    out = out.decode(errors="replace")
    err = err.decode(errors="replace")
    want = nodes if times == "nodes" else 1
    ok = not timed_out and launcher.returncode == 0 and out.count(expected) >= want
    # The median node, and the busiest (rank 0 usually: everyone's first peer).
    fds = sorted(p[0] for p in peaks.values()) or [0]
    rss = sorted(p[1] for p in peaks.values()) or [0]
    problem = ""
    if not ok:
        problem = "timed out" if timed_out else (
            f"exit {launcher.returncode}, {out.count(expected)} of {want} '{expected}'; "
            f"{err.strip().splitlines()[-1] if err.strip() else ''}")
    return (ok, seconds, (fds[len(fds) // 2], fds[-1]),
            (rss[len(rss) // 2] / 1024.0, rss[-1] / 1024.0), problem)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="64", help="job sizes, comma-separated")
    parser.add_argument("--bin", default=os.path.join(ROOT, "bazel-bin"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per job")
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES))
    options = parser.parse_args()
    try:
        sizes = [int(n) for n in options.nodes.split(",")]
    except ValueError:
        parser.error(f"--nodes needs whole numbers separated by commas, not '{options.nodes}'")
    if any(n < 1 or n > 1024 for n in sizes):
        parser.error("--nodes takes job sizes from 1 to 1024")
    chosen = options.cases.split(",")
    unknown = [c for c in chosen if c not in [case[0] for case in CASES]]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {[c[0] for c in CASES]}")
    bin_dir = os.path.realpath(options.bin)
    print(f"{'case':<16}{'nodes':>6}{'seconds':>9}{'fds (median/max)':>18}"
          f"{'MiB (median/max)':>18}  result", flush=True)
    passed = failed = 0
    for case in CASES:
        if case[0] not in chosen:
            continue
        for nodes in sizes:
            ok, seconds, fds, mib, problem = run_case(bin_dir, case, nodes, options.timeout)
            passed += ok
            failed += not ok
            fds_text = f"{fds[0]}/{fds[1]}"
            mib_text = f"{mib[0]:.1f}/{mib[1]:.1f}"
            print(f"{case[0]:<16}{nodes:>6}{seconds:>9.2f}{fds_text:>18}{mib_text:>18}  "
                  f"{'ok' if ok else 'FAILED: ' + problem}", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
