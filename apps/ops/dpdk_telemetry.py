"""A client of DPDK's telemetry socket (what dpdk-telemetry.py speaks), for
tita-exporter and for the scripts and tests that drive tita-switch and tita-perf.

    t = Telemetry("file-prefix")        # waits for the socket, reads the greeting
    t.reply("/tita_switch/ports")       # {"/tita_switch/ports": [0, 1]}
    t.query("/tita_switch/port,1")      # the value alone: {"name": ..., ...}
    for prefix, path in discover(): ... # every DPDK process of this machine
"""
import glob
import json
import os
import socket
import time

SOCKET = "dpdk_telemetry.v2"


def runtime_dirs():
    """Where DPDK processes keep their runtime files: root's, then this user's."""
    return ["/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")]


def socket_path(prefix):
    """The process's telemetry socket (root or per-user runtime dir), or None."""
    for base in runtime_dirs():
        path = os.path.join(base, prefix, SOCKET)
        if os.path.exists(path):
            return path
    return None


def discover():
    """(file prefix, socket path) of every DPDK process with a telemetry socket,
    sorted by prefix. A socket may belong to a process that has exited."""
    found = {}
    for base in runtime_dirs():
        for path in glob.glob(os.path.join(base, "*", SOCKET)):
            found.setdefault(os.path.basename(os.path.dirname(path)), path)
    return sorted(found.items())


def targets(prefixes):
    """(prefix, socket path or None) of the named processes, or of every one found."""
    return [(p, socket_path(p)) for p in prefixes] if prefixes else discover()


def wait_for_socket(prefix, timeout=10.0):
    """socket_path(prefix), polled until it exists or `timeout` seconds pass."""
    deadline = time.time() + timeout
    while True:
        path = socket_path(prefix)
        if path or time.time() >= deadline:
            return path
        time.sleep(0.1)


class Telemetry:
    """One connection. `prefix` names the process (waited for up to `timeout`
    seconds); `path` connects to a socket directly (no wait)."""

    def __init__(self, prefix=None, timeout=20.0, path=None):
        if path is None:
            path = wait_for_socket(prefix, timeout)
            if path is None:
                raise RuntimeError(f"no telemetry socket for {prefix}")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(5.0)
        try:
            self.s.connect(path)
            self.greeting = json.loads(self.s.recv(1 << 16).decode())
        except Exception:
            self.s.close()
            raise
        # Replies are at most the greeting's output buffer size.
        self.max_reply = int(self.greeting.get("max_output_len", 1 << 14)) + 1024

    def reply(self, cmd):
        """The whole JSON reply: {command: value}."""
        self.s.send(cmd.encode())
        return json.loads(self.s.recv(max(self.max_reply, 1 << 16)).decode())

    def query(self, cmd):
        """The reply's value (None if the command is unknown)."""
        return self.reply(cmd).get(cmd.split(",")[0])

    def commands(self):
        """The commands the process registered."""
        return self.query("/") or []

    def close(self):
        self.s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
