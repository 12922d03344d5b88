"""What the stress scripts read of a running job from /proc."""


def node_pids(launcher_pid):
    """The node processes `lmdx run` started: the launcher's children (none once it is gone)."""
    try:
        with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []
