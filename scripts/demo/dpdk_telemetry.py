"""A client of DPDK's telemetry socket (what dpdk-telemetry.py speaks), for the
scripts and tests that drive tita-switch and tita-perf.

    t = Telemetry("file-prefix")        # waits for the socket, reads the greeting
    t.reply("/tita_switch/ports")       # {"/tita_switch/ports": [0, 1]}
    t.query("/tita_switch/port,1")      # the value alone: {"name": ..., ...}
"""
import json
import os
import socket
import time


def socket_path(prefix):
    """The process's telemetry socket (root or per-user runtime dir), or None."""
    for base in ("/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")):
        path = os.path.join(base, prefix, "dpdk_telemetry.v2")
        if os.path.exists(path):
            return path
    return None


def wait_for_socket(prefix, timeout=10.0):
    """socket_path(prefix), polled until it exists or `timeout` seconds pass."""
    deadline = time.time() + timeout
    while True:
        path = socket_path(prefix)
        if path or time.time() >= deadline:
            return path
        time.sleep(0.1)


class Telemetry:
    def __init__(self, prefix, timeout=20.0):
        path = wait_for_socket(prefix, timeout)
        if path is None:
            raise RuntimeError(f"no telemetry socket for {prefix}")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.connect(path)
        json.loads(self.s.recv(1 << 16).decode())  # greeting

    def reply(self, cmd):
        """The whole JSON reply: {command: value}."""
        self.s.send(cmd.encode())
        return json.loads(self.s.recv(1 << 16).decode())

    def query(self, cmd):
        """The reply's value (None if the command is unknown)."""
        return self.reply(cmd).get(cmd.split(",")[0])

    def close(self):
        self.s.close()
