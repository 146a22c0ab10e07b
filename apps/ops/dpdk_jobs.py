"""Which DPDK processes of this machine run together: a job.

A DPDK primary process keeps files of its runtime directory (DPDK's
`/var/run/dpdk/PREFIX/`, or `$XDG_RUNTIME_DIR/dpdk/PREFIX/`) open for as long as
it runs (the config file it locks, its memory segment lists), so the process of
a file prefix is the one with such a file open. A job is the processes started
together: the children of one parent (a shell, a launcher, a test), or, for
processes whose parent has gone (adopted by init), one session.

    owners()              # {prefix: pid} of every running DPDK primary
    jobs(prefixes)        # [Job], oldest first
"""
import os

import dpdk_telemetry


def owners():
    """{file prefix: pid} of the running processes that hold their runtime
    directory's files open (a socket left by an exited process has no owner)."""
    dirs = [os.path.realpath(d) + os.sep for d in dpdk_telemetry.runtime_dirs() if os.path.isdir(d)]
    found = {}
    if not dirs:
        return found
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            for d in dirs:
                if target.startswith(d):
                    prefix = target[len(d):].split(os.sep, 1)[0]
                    found.setdefault(prefix, int(pid))
    return found


def _stat(pid):
    """(ppid, session id, start time in clock ticks after boot) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[3]), int(fields[19])


def age_s(pid):
    """Seconds since process `pid` started, or None if it has gone."""
    try:
        _, _, start = _stat(pid)
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return up - start / os.sysconf("SC_CLK_TCK")


def schedstat(pid):
    """(ns run on a CPU, ns waited on a run queue) of the process's main thread
    (a DPDK process's main lcore), or None."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            run, wait = f.read().split()[:2]
        return int(run), int(wait)
    except (OSError, ValueError):
        return None


def _command(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
        return os.path.basename(words[0].decode(errors="replace")) if words and words[0] else "?"
    except OSError:
        return "?"


class Job:
    def __init__(self, key, parent):
        self.key, self.parent = key, parent
        self.members = {}  # prefix -> pid

    def started_s(self):
        """Seconds since its oldest member started."""
        ages = [a for a in (age_s(p) for p in self.members.values()) if a is not None]
        return max(ages) if ages else 0.0

    def origin(self):
        """Who started it, and when: "started by sh (pid 12), 5 s ago"."""
        by = f"started by {_command(self.parent)} (pid {self.parent})" if self.parent > 1 else \
            f"session {self.key[1]}"
        return f"{by}, {self.started_s():.0f} s ago"

    def describe(self):
        return f"{', '.join(sorted(self.members))} ({self.origin()})"


def jobs(prefixes=None, pids=None):
    """The jobs of the running processes among `prefixes` (default: all), oldest
    first; `pids` is owners() if the caller has it."""
    pids = owners() if pids is None else pids
    out = {}
    for prefix, pid in sorted(pids.items()):
        if prefixes is not None and prefix not in prefixes:
            continue
        try:
            ppid, sid, _ = _stat(pid)
        except (OSError, ValueError, IndexError):
            continue
        key = ("parent", ppid) if ppid > 1 else ("session", sid)
        out.setdefault(key, Job(key, ppid)).members[prefix] = pid
    return sorted(out.values(), key=lambda j: -j.started_s())
