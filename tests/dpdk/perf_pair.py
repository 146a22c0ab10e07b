#!/usr/bin/python3
"""tita-perf between two processes over real DPDK ports, with every byte checked.

Usage: perf_pair.py TITA_PERF TITA_WIRE TRANSPORT WORKDIR
  TRANSPORT: vhost   net_vhost / net_virtio_user, --no-huge
             engines two engines per process (--engines 2): --loopback over
                     net_ring, and vhost / virtio-user with two queue pairs
             vhost-huge  the same on 2 MiB hugepages (--in-memory; root)
             memif   net_memif server / client, --no-huge
             afxdp   net_af_xdp on a veth pair between two network namespaces (root)
             tap     net_tap ports joined by a Linux bridge; tshark captures the
                     bridge and the capture must decode as RoCEv2 (root)

Each side runs on its own lcore (-l 0 / -l 1): two DPDK processes polling on the
same core would time-share it. Tests that need root or kernel features print why
and exit 77 (meson's "skipped") when those are missing.
"""
import json
import os
import shutil
import subprocess
import sys
import time

SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class Pair:
    def __init__(self, perf, server_eal, client_eal, server_port, client_port, wrap_server=(), wrap_client=(),
                 oob_host="127.0.0.1"):
        self.perf = perf
        self.server_eal, self.client_eal = server_eal, client_eal
        self.server_port, self.client_port = server_port, client_port
        self.wrap_server, self.wrap_client = list(wrap_server), list(wrap_client)
        self.oob_host = oob_host
        self.server_extra, self.client_extra = [], []
        self.server_lcores, self.client_lcores = ["-l", "0"], ["-l", "1"]

    def test(self, args, tcp_port, during=None):
        """Runs one test; during(), if given, is called while the client runs."""
        common = ["--no-pci", "--log-level=*:error"]
        server = self.wrap_server + [self.perf] + self.server_lcores + common + self.server_eal + [
            "--", "--port", self.server_port, "--ip", "10.0.0.2", "--server", "--json", "--tcp-port", str(tcp_port)
        ] + self.server_extra
        client = self.wrap_client + [self.perf] + self.client_lcores + common + self.client_eal + [
            "--", "--port", self.client_port, "--ip", "10.0.0.1", "--client", self.oob_host, "--json",
            "--tcp-port", str(tcp_port)] + self.client_extra + args
        srv = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        try:
            if during is None:
                cli = subprocess.run(client, capture_output=True, text=True, timeout=120)
            else:
                proc = subprocess.Popen(client, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                try:
                    during()
                finally:
                    out_c, err_c = proc.communicate(timeout=120)
                cli = subprocess.CompletedProcess(client, proc.returncode, out_c, err_c)
        finally:
            try:
                out_s, err_s = srv.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                srv.kill()
                out_s, err_s = srv.communicate()
        lines = [l for l in cli.stdout.splitlines() if l.startswith("{")]
        if cli.returncode != 0 or not lines:
            raise AssertionError(f"client failed ({cli.returncode}): {cli.stderr[-2000:]}\nserver: {err_s[-2000:]}")
        result = json.loads(lines[-1])
        result["stderr"] = cli.stderr
        if result["check"] not in ("ok", "off"):
            raise AssertionError(f"data check: {result['check']}")
        if result["messages"] <= 0:
            raise AssertionError("no message completed")
        return result


def check_all_verbs(pair, extra=()):
    port = 18600
    for test in ("write", "send", "read"):
        for size in ("100", "5000", "65536"):
            port += 1
            r = pair.test(["--test", test, "--size", size, "--qps", "2", "--duration", "0.5", "--check",
                           "--mtu", "1024"] + list(extra), port)
            print(f"{test:5} {size:>6} B: {r['messages']:.0f} messages, {r['gbps']:.2f} Gb/s, check {r['check']}, "
                  f"retransmitted {r['client']['retransmitted_packets']}")
    port += 1
    r = pair.test(["--test", "send", "--mode", "lat", "--size", "64", "--iters", "2000"] + list(extra), port)
    print(f"send latency 64 B: p50 {r['latency_us']['p50']:.2f} us, p99 {r['latency_us']['p99']:.2f} us")


def telemetry(prefix, commands):
    """Asks a running DPDK process through DPDK's own telemetry client.
    Returns the replies and what the client printed on stderr."""
    r = subprocess.run(["dpdk-telemetry.py", "-f", prefix], input="\n".join(commands) + "\n",
                       capture_output=True, text=True, timeout=30)
    replies = {}
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            replies.update(json.loads(line))
    return replies, r.stderr.strip()


def hostile_clients(perf, work):
    """A tita-perf server's out-of-band channel is the network's: messages that
    are not JSON, of the wrong shape, or asking for more than the command line
    allows end the server with one line naming the problem (exit 1), never an
    uncaught exception (abort) or a huge allocation."""
    import socket
    cases = [("not JSON", b"hello\n", "malformed message"),
             ("too many QPs", b'{"test": "write", "qps": 100000}\n', "the client's test: 100000 QPs is not 1 to 4096"),
             ("an unknown test", b'{"test": "rm", "qps": 1}\n', "the client's test: test 'rm' is not"),
             ("a size of the wrong type", b'{"test": "write", "size": "big"}\n', "not tita-perf's"),
             ("info of the wrong shape", b'{"test": "write", "info": 5}\n', "not tita-perf's")]
    for i, (what, msg, expect) in enumerate(cases):
        sock = os.path.join(work, f"hostile{i}.sock")
        if os.path.exists(sock):
            os.unlink(sock)
        port = 18720 + i
        srv = subprocess.Popen([perf, "-l", "0", "--no-pci", "--log-level=*:error", "--no-huge", "-m", "256",
                                f"--file-prefix=tita-hostile{i}", f"--vdev=net_vhost0,iface={sock},queues=1", "--",
                                "--port", "net_vhost0", "--ip", "10.0.0.2", "--server", "--tcp-port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(300):
                try:
                    conn = socket.create_connection(("127.0.0.1", port), timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                raise AssertionError(f"{what}: the server never listened: {srv.stderr.read()[-500:]}")
            conn.sendall(msg)
            _, err = srv.communicate(timeout=30)
            conn.close()
        finally:
            if srv.poll() is None:
                srv.kill()
                srv.wait()
        lines = [l for l in err.splitlines() if l.strip()]
        if srv.returncode != 1 or len(lines) != 1 or expect not in lines[0] or not lines[0].startswith("tita-perf: "):
            raise AssertionError(f"{what}: exit {srv.returncode}, stderr {err[-500:]!r}")
        print(f"ok   a client sending {what}: exit 1, {lines[0]}")


def command_line(perf):
    """tita-perf's options are read before EAL starts: its help needs no EAL
    arguments (EAL's own help is not what `--help` should print), and a bad
    option is one line, exit 2, with no EAL output (EAL never started)."""
    for args in (["--help"], ["-l", "0", "--no-pci", "--", "--help"]):
        r = subprocess.run([perf] + args, capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or "--client" not in r.stdout or "EAL: " in r.stdout + r.stderr:
            raise AssertionError(f"tita-perf {' '.join(args)}: exit {r.returncode}, {r.stdout[-300:]}{r.stderr[-300:]}")
    for args, expect in ((["-l", "0", "--", "--size", "0"], "--size: Value 0 not in range"),
                         (["-l", "0", "--", "--client", "h", "--cc", "reno"], "unknown congestion control 'reno'"),
                         ([], "give --server, --client HOST or --loopback")):
        r = subprocess.run([perf] + args, capture_output=True, text=True, timeout=30)
        if r.returncode == 0 or expect not in r.stderr or "EAL: " in r.stderr:
            raise AssertionError(f"tita-perf {' '.join(args)}: exit {r.returncode}, stderr {r.stderr[-300:]!r}")
    print("ok   tita-perf --help and bad options before EAL starts")


def vhost(perf, work):
    command_line(perf)
    sock = os.path.join(work, "vhost.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    pair = Pair(perf,
                ["--no-huge", "-m", "1024", "--file-prefix=tita-vh-s", f"--vdev=net_vhost0,iface={sock},queues=1"],
                ["--no-huge", "-m", "1024", "--file-prefix=tita-vh-c", f"--vdev=net_virtio_user0,path={sock},queues=1"],
                "net_vhost0", "net_virtio_user0")
    check_all_verbs(pair)
    # Zero copy asked for on virtio-user: its vhost backend cannot read the
    # application's memory, so the payload is copied, and the user is told.
    r = pair.test(["--test", "write", "--size", "65536", "--qps", "2", "--duration", "0.5", "--check", "--zero-copy"],
                  18680)
    said = [l for l in r["stderr"].splitlines() if "zero copy off, payload copied" in l]
    print(f"zero copy on virtio-user: {r['client']['zero_copy_frames']} zero-copy frames, check {r['check']}: "
          f"{said[0] if said else 'nothing said'}")
    if r["client"]["zero_copy_frames"] != 0 or not said or r["check"] != "ok":
        raise AssertionError("zero copy on virtio-user: not refused, or refused silently")
    hostile_clients(perf, work)
    if shutil.which("dpdk-telemetry.py") is None:
        print("dpdk-telemetry.py not installed: telemetry not checked")
        return
    # Live statistics while a DCQCN run is going: the client's engine, its QPs, one QP.
    seen = {}

    def complete(r):
        qp = r.get("/tita/qp", {})
        return r.get("/tita/engines") == [0] and len(r.get("/tita/qps", [])) == 2 and qp.get("tx_packets")

    tries = []

    def ask():
        # The client's EAL and QPs come up at a time that depends on how loaded
        # the machine is: ask again (one session each; DPDK 22.11's telemetry
        # socket may refuse a client right after another) until the answer
        # names both QPs, or the 6 s run is nearly over.
        deadline = time.monotonic() + 4.5
        time.sleep(1.0)
        while True:
            replies, err = telemetry("tita-vh-c", ["/tita/engines", "/tita/qps,0", "/tita/qp,0,17", "/tita/engine,0"])
            tries.append(err[-200:] if err else f"{len(replies)} replies")
            seen.clear()
            seen.update(replies)
            if complete(replies) or time.monotonic() > deadline:
                return
            time.sleep(0.5)

    pair.test(["--test", "write", "--size", "65536", "--qps", "2", "--duration", "6", "--cc", "dcqcn"], 18690, ask)
    qp = seen.get("/tita/qp", {})
    eng = seen.get("/tita/engine", {})
    print(f"telemetry: engines {seen.get('/tita/engines')}, qps {seen.get('/tita/qps')}, qp state "
          f"{qp.get('state')} cc {qp.get('cc')} tx_packets {qp.get('tx_packets')}, engine rx_frames "
          f"{eng.get('rx_frames')}")
    if seen.get("/tita/engines") != [0] or len(seen.get("/tita/qps", [])) != 2:
        raise AssertionError(f"telemetry lists: {seen}; {len(tries)} tries: {tries}")
    if qp.get("state") != "RTS" or qp.get("cc") != "dcqcn" or not qp.get("tx_packets"):
        raise AssertionError(f"telemetry QP: {qp}")
    if not eng.get("rx_frames") or eng.get("rx_dropped") != 0:
        raise AssertionError(f"telemetry engine: {eng}")


def engines(perf, work):
    """Two engines per process, each on its own lcore and queue pair: in one
    process over crossed net_ring queues (--loopback), and between two
    processes over vhost-user with two queue pairs. QP i runs on engine i mod 2
    at both ends, so its frames arrive on its own engine's queue. Every byte is
    checked and each engine must have carried its QPs' messages. (Four busy
    threads share this machine's two vCPUs: correctness, not speed.)"""
    for args, expect in ((["-l", "0", "--no-huge", "-m", "256", "--no-pci", "--file-prefix=tita-eng-l", "--",
                           "--engines", "2", "--client", "127.0.0.1"], "--engines 2 needs 2 lcores; EAL has 1"),
                         (["--", "--engines", "2", "--client", "h", "--series", "x.csv"],
                          "--series samples one engine's QPs")):
        r = subprocess.run([perf] + args, capture_output=True, text=True, timeout=60)
        if r.returncode != 2 or expect not in r.stderr:
            raise AssertionError(f"tita-perf {' '.join(args)}: exit {r.returncode}, stderr {r.stderr[-300:]!r}")
    print("ok   --engines without its lcores, and with --series: one-line errors")
    lcores = ["--lcores", "0@0,1@1,2@0,3@1"]
    # (read: the peers' MACs by ARP, which every engine of a port must hear)
    for test in ("write", "send", "read"):
        r = subprocess.run([perf] + lcores + ["--no-huge", "-m", "1024", "--no-pci", "--log-level=*:error",
                           f"--file-prefix=tita-eng-{test}", "--", "--loopback", "--engines", "2", "--test", test,
                           "--size", "5000", "--qps", "4", "--mtu", "1024", "--iters", "300", "--check", "--json"]
                           + (["--arp"] if test == "read" else []),
                           capture_output=True, text=True, timeout=120)
        lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
        if r.returncode != 0 or not lines:
            raise AssertionError(f"--loopback --engines 2 {test}: exit {r.returncode}: {r.stderr[-1500:]}")
        out = json.loads(lines[-1])
        per = out["client"]["engine_messages"]
        if out["check"] != "ok" or out["messages"] != 1200 or per != [600, 600]:
            raise AssertionError(f"--loopback --engines 2 {test}: {out['check']}, {out['messages']} messages, "
                                 f"per engine {per}")
        print(f"ok   loopback, 2 engines, {test}: 1200 messages (600 per engine), check ok, "
              f"handed over {out['client']['rx_handed_off']} + {out['server']['rx_handed_off']}")
    sock = os.path.join(work, "vhost-eng.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    pair = Pair(perf,
                ["--no-huge", "-m", "1024", "--file-prefix=tita-ve-s", f"--vdev=net_vhost0,iface={sock},queues=2"],
                ["--no-huge", "-m", "1024", "--file-prefix=tita-ve-c", f"--vdev=net_virtio_user0,path={sock},queues=2"],
                "net_vhost0", "net_virtio_user0")
    pair.server_lcores, pair.client_lcores = ["--lcores", "0@0,1@1"], ["--lcores", "0@1,1@0"]
    pair.server_extra = ["--engines", "2"]
    for port, test in enumerate(("write", "send", "read")):
        r = pair.test(["--engines", "2", "--test", test, "--size", "65536", "--qps", "4", "--iters", "50",
                       "--check"], 18640 + port)
        per = r["client"]["engine_messages"]
        if r["check"] != "ok" or per != [100, 100]:
            raise AssertionError(f"vhost, 2 engines, {test}: check {r['check']}, per engine {per}")
        print(f"ok   vhost queues=2, 2 engines each side, {test}: per engine {per}, check ok, handed over "
              f"{r['client']['rx_handed_off']} + {r['server']['rx_handed_off']}")


def vhost_huge(perf, work):
    """The same over hugepages (--in-memory): reserves 2 MiB pages itself."""
    need_root("the hugepage test")
    path = "/proc/sys/vm/nr_hugepages"
    have = int(open(path).read())
    if have < 512:
        with open(path, "w") as f:
            f.write("512")
    free = int([l.split()[1] for l in open("/proc/meminfo") if l.startswith("HugePages_Free")][0])
    if free < 256:
        skip(f"only {free} free 2 MiB hugepages")
    sock = os.path.join(work, "vhost-huge.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    huge = ["--in-memory", "--single-file-segments", "-m", "256"]
    pair = Pair(perf, huge + [f"--vdev=net_vhost0,iface={sock},queues=1"],
                huge + [f"--vdev=net_virtio_user0,path={sock},queues=1"], "net_vhost0", "net_virtio_user0")
    for test in ("write", "send", "read"):
        r = pair.test(["--test", test, "--size", "65536", "--duration", "0.5", "--check"], 18660 + len(test))
        print(f"hugepages {test}: {r['messages']:.0f} messages, {r['gbps']:.2f} Gb/s, check {r['check']}")


def memif(perf, work):
    sock = os.path.join(work, "memif.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    pair = Pair(perf,
                ["--no-huge", "-m", "1024", "--file-prefix=tita-mf-s",
                 f"--vdev=net_memif0,role=server,socket={sock},id=0,bsize=8192"],
                ["--no-huge", "-m", "1024", "--file-prefix=tita-mf-c",
                 f"--vdev=net_memif0,role=client,socket={sock},id=0,bsize=8192"],
                "net_memif0", "net_memif0")
    check_all_verbs(pair)
    # Zero copy, the default: memif's sender copies each segment into the
    # shared ring itself, so payload attached from the application's memory
    # goes out, each frame held until memif has freed it. --no-zero-copy copies.
    for flag, want_zero_copy in (([], True), (["--no-zero-copy"], False)):
        r = pair.test(["--test", "write", "--size", "65536", "--qps", "2", "--duration", "0.5", "--check", *flag],
                      18680)
        zc = r["client"]["zero_copy_frames"]
        print(f"memif {' '.join(flag) or 'default'}: {zc} zero-copy frames, check {r['check']}")
        if (zc > 0) != want_zero_copy or r["check"] != "ok":
            raise AssertionError(f"memif {' '.join(flag) or 'default'}: {zc} zero-copy frames, check {r['check']}")


def need_root(what):
    if os.geteuid() != 0:
        skip(f"{what} needs root (network namespaces, veth, bridges); CI runs as root")
    if shutil.which("ip") is None:
        skip("iproute2 (ip) is not installed")


def sh(*cmd):
    subprocess.run(list(cmd), check=True)


def afxdp(perf, work):
    need_root("the AF_XDP test")
    ns = ("tita-xa", "tita-xb")
    prog = "/usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog.o"

    def cleanup():
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)

    cleanup()
    try:
        for n in ns:
            sh("ip", "netns", "add", n)
        # Data on one veth pair (owned by AF_XDP), the out-of-band TCP on another.
        sh("ip", "link", "add", "txa", "netns", ns[0], "type", "veth", "peer", "name", "txb", "netns", ns[1])
        sh("ip", "link", "add", "tma", "netns", ns[0], "type", "veth", "peer", "name", "tmb", "netns", ns[1])
        for n, d, m, ip in ((ns[0], "txa", "tma", "10.98.0.1/24"), (ns[1], "txb", "tmb", "10.98.0.2/24")):
            sh("ip", "-n", n, "link", "set", "lo", "up")
            sh("ip", "-n", n, "link", "set", d, "mtu", "3000", "up")
            sh("ip", "-n", n, "link", "set", m, "up")
            sh("ip", "-n", n, "addr", "add", ip, "dev", m)
            if os.path.exists(prog):
                subprocess.run(["ip", "-n", n, "link", "set", "dev", d, "xdpgeneric", "obj", prog, "sec", "xdp"],
                               capture_output=True)
        eal = lambda d, p: ["--no-huge", "-m", "1024", f"--file-prefix=tita-xdp-{p}",
                            f"--vdev=net_af_xdp0,iface={d},start_queue=0,queue_count=1,force_copy=1"]
        pair = Pair(perf, eal("txb", "s"), eal("txa", "c"), "net_af_xdp0", "net_af_xdp0",
                    wrap_server=["ip", "netns", "exec", ns[1]], wrap_client=["ip", "netns", "exec", ns[0]],
                    oob_host="10.98.0.2")
        # Both cores are busy polling, so the kernel's veth and XDP work (softirqs)
        # runs late and the path drops under load: pace and keep windows small.
        slow = ["--rate", "1", "--pace", "--tx-depth", "16"]
        try:
            r = pair.test(["--test", "write", "--size", "4096", "--duration", "0.5", "--check", "--mtu", "1024"] + slow,
                          18700)
        except AssertionError as e:
            if "af_xdp" in str(e).lower() or "xsk" in str(e).lower():
                skip(f"AF_XDP could not start here: {str(e)[:300]}")
            raise
        print(f"af_xdp write: {r['messages']:.0f} messages, {r['gbps']:.2f} Gb/s, check {r['check']}")
        check_all_verbs(pair, slow)
    finally:
        cleanup()


def tap_capture(perf, wire, work):
    need_root("the tap capture test")
    if shutil.which("tshark") is None:
        skip("tshark is not installed")
    br = "tita-br0"
    subprocess.run(["ip", "link", "del", br], capture_output=True)
    pcap = os.path.join(work, "tap.pcap")
    sh("ip", "link", "add", br, "type", "bridge")
    sh("ip", "link", "set", br, "up")
    cap = None
    try:
        srv_eal = ["--no-huge", "-m", "1024", "--file-prefix=tita-tap-s", "--vdev=net_tap0,iface=tita-tap0"]
        cli_eal = ["--no-huge", "-m", "1024", "--file-prefix=tita-tap-c", "--vdev=net_tap1,iface=tita-tap1"]

        class TapPair(Pair):
            # The tap devices appear when each process starts: enslave them as they do.
            def test(self, args, tcp_port):
                return super().test(args, tcp_port)

        # tshark on the bridge sees every frame the two ports exchange.
        cap = subprocess.Popen(["tshark", "-q", "-i", br, "-w", pcap, "-f", "udp port 4791"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tshark says when it captures; on a loaded machine that takes seconds,
        # and a transfer started before it would go unseen.
        import threading
        started = threading.Event()

        def watch():
            for line in cap.stderr:
                if "Capturing on" in line:
                    started.set()
        threading.Thread(target=watch, daemon=True).start()
        if not started.wait(60):
            raise AssertionError("tshark did not start capturing on the bridge within 60 s")
        # The bridge keeps frames for a tap's own (kernel) MAC for itself: give the
        # engines MACs of their own.
        pair = TapPair(perf, srv_eal, cli_eal, "net_tap0", "net_tap1")
        pair.server_extra = ["--mac", "02:00:00:00:77:02"]
        pair.client_extra = ["--mac", "02:00:00:00:77:01"]
        import threading

        def enslave():
            for _ in range(100):
                time.sleep(0.1)
                done = 0
                for t in ("tita-tap0", "tita-tap1"):
                    if subprocess.run(["ip", "link", "set", t, "master", br, "up"], capture_output=True).returncode == 0:
                        done += 1
                if done == 2:
                    return

        threading.Thread(target=enslave, daemon=True).start()
        time.sleep(2)
        r = pair.test(["--test", "write", "--size", "3000", "--iters", "200", "--check", "--mtu", "1024"], 18800)
        time.sleep(1)
    finally:
        if cap is not None:
            cap.terminate()
            cap.wait()
        subprocess.run(["ip", "link", "del", br], capture_output=True)
    out = run(["tshark", "-r", pcap, "-T", "fields", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn"]).stdout
    rows = [l.split("\t") for l in out.splitlines() if l.strip()]
    opcodes = {int(r[0]) for r in rows if r and r[0]}
    ours = [json.loads(l) for l in run([wire, "parse", "--pcap", pcap]).stdout.splitlines()]
    bad = [o for o in ours if o["result"] != "ok"]
    print(f"tap capture: {len(rows)} RoCEv2 frames decoded by tshark, opcodes {sorted(opcodes)}, "
          f"{len(bad)} frames tita's parser rejects, check {r['check']}")
    # WRITE First/Middle/Last and ACKs at least, every frame valid (ICRC included).
    if not {0x06, 0x07, 0x08, 0x11} <= opcodes:
        raise AssertionError(f"expected WRITE First/Middle/Last and ACK in the capture, saw {sorted(opcodes)}")
    if bad:
        raise AssertionError(f"tita rejects captured frames: {bad[:3]}")
    # tita-perf starts each QP at a random PSN, as rdma-core's tools do (one run in
    # 2^24 starts at 0 by chance).
    first = next(int(r[1]) for r in rows if len(r) > 1 and r[0] and int(r[0]) == 0x06)
    if first == 0:
        raise AssertionError("the first WRITE First carries PSN 0: initial PSNs are not random")


def main():
    perf, wire, transport, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    if transport == "vhost":
        vhost(perf, work)
    elif transport == "vhost-huge":
        vhost_huge(perf, work)
    elif transport == "memif":
        memif(perf, work)
    elif transport == "afxdp":
        afxdp(perf, work)
    elif transport == "tap":
        tap_capture(perf, wire, work)
    elif transport == "engines":
        engines(perf, work)
    else:
        sys.exit(f"unknown transport {transport}")


if __name__ == "__main__":
    main()
