#!/usr/bin/env python3
"""The Soft-RoCE VM's command agent: one JSON object per line over TCP, one
reply per line. Requests:

  {"op": "run", "argv": [...], "timeout": 60}          -> {"rc", "out"}
  {"op": "spawn", "argv": [...]}                       -> {"id"}
  {"op": "wait", "id": N, "timeout": 60}               -> {"rc", "out"} (rc null: still running)
  {"op": "kill", "id": N}                              -> {"rc", "out"}
  {"op": "ping"}                                       -> {"ok": true}

Programs run with stdout and stderr together; nothing here is reachable from
outside the test's own network namespace (qemu's user network forwards one
loopback port to it)."""
import json
import socketserver
import subprocess
import sys
import tempfile

procs = {}


def reply_for(req):
    op = req.get("op")
    if op == "ping":
        return {"ok": True}
    if op == "run":
        try:
            p = subprocess.run(req["argv"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=req.get("timeout", 60))
            return {"rc": p.returncode, "out": p.stdout.decode(errors="replace")}
        except subprocess.TimeoutExpired as e:
            return {"rc": None, "out": (e.stdout or b"").decode(errors="replace") + "\n(timeout)"}
        except OSError as e:
            return {"rc": 127, "out": str(e)}
    if op == "spawn":
        log = tempfile.TemporaryFile()
        p = subprocess.Popen(req["argv"], stdout=log, stderr=subprocess.STDOUT)
        procs[p.pid] = (p, log)
        return {"id": p.pid}
    if op in ("wait", "kill"):
        p, log = procs[req["id"]]
        if op == "kill" and p.poll() is None:
            p.kill()
        try:
            rc = p.wait(timeout=req.get("timeout", 60))
        except subprocess.TimeoutExpired:
            return {"rc": None, "out": ""}
        log.seek(0)
        out = log.read().decode(errors="replace")
        del procs[req["id"]]
        return {"rc": rc, "out": out}
    return {"error": f"unknown op {op!r}"}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            try:
                rep = reply_for(json.loads(line))
            except Exception as e:  # a bad request is answered, never fatal
                rep = {"error": repr(e)}
            self.wfile.write((json.dumps(rep) + "\n").encode())
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    Server(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
