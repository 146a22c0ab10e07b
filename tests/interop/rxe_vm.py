"""A VM running Linux Soft-RoCE (rdma_rxe) on Debian's kernel, as tita's peer.

The VM (scripts/rxe-vm/build-image.sh) boots under qemu with TCG in a network
namespace of its own. Its data NIC is a tap in that namespace, which tita
attaches to with DPDK's af_packet PMD; its control NIC is qemu's user network,
through which the command agent (scripts/rxe-vm/agent.py) and the programs'
TCP exchanges go: the namespace's 127.0.0.1:PORT reaches the VM's PORT for the
forwarded ports, and the VM reaches the namespace's 127.0.0.1 as 10.0.2.2.
The test process enters the namespace itself (setns), so everything it starts
and every socket it opens is in there too.
"""
import ctypes
import json
import os
import shutil
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_IMAGE = os.path.join(ROOT, "scripts", "rxe-vm", "build-image.sh")

AGENT_PORT = 7100
# Ports the VM's programs listen on, forwarded from the namespace's loopback.
# tita's servers listen on these plus TITA_SIDE (not forwarded), where the VM
# reaches them as 10.0.2.2.
FORWARDED = list(range(18500, 18560))
TITA_SIDE = 100


def qemu_missing():
    """Why the VM cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root (network namespaces, taps and debootstrap need it)"
    for tool in ("qemu-system-x86_64", "debootstrap", "mkfs.ext4", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup.sh installs it)"
    return None


def build_image(log):
    r = subprocess.run([BUILD_IMAGE], capture_output=True, text=True)
    log.write(r.stderr)
    if r.returncode != 0:
        raise RuntimeError(f"building the VM image failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout.strip().splitlines()[-1]


class Namespace:
    """A network namespace with a tap for the VM's data NIC."""

    def __init__(self, name, tap="tap0", mtu=1500):
        self.name, self.tap = name, tap
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        for cmd in (["ip", "netns", "add", name], ["ip", "-n", name, "link", "set", "lo", "up"],
                    ["ip", "-n", name, "tuntap", "add", tap, "mode", "tap"],
                    ["ip", "-n", name, "link", "set", tap, "mtu", str(mtu), "up"],
                    ["ip", "netns", "exec", name, "sysctl", "-qw", f"net.ipv6.conf.{tap}.disable_ipv6=1"]):
            subprocess.run(cmd, check=True, capture_output=True)

    def enter(self):
        """Moves this process (its one thread) into the namespace."""
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/var/run/netns/{self.name}", os.O_RDONLY)
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "setns")
        os.close(fd)

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


class Vm:
    """The VM: its data NIC on the namespace's tap (tita's peer), or on
    `data_netdev` (a qemu -netdev spec: `socket,listen=...` and
    `socket,connect=...` join two VMs, for an rxe-to-rxe reference); the
    agent and the forwarded ports on the namespace's loopback, at other ports
    for a second VM."""

    def __init__(self, ns, image_dir, work, vm_ip="10.0.0.2/24", mtu=1500, data_netdev=None,
                 agent_port=AGENT_PORT, forwarded=FORWARDED, name="vm"):
        self.ns = ns
        self.agent_port = agent_port
        self.console = os.path.join(work, f"{name}-console.log")
        fwd = ",".join(f"hostfwd=tcp:127.0.0.1:{p}-:{p}" for p in forwarded)
        data_netdev = data_netdev or f"tap,ifname={ns.tap},script=no,downscript=no"
        argv = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2",
                "-m", "1024", "-nodefaults", "-display", "none", "-no-reboot",
                "-kernel", os.path.join(image_dir, "vmlinuz"), "-initrd", os.path.join(image_dir, "initrd.img"),
                "-append", f"root=/dev/vda rw console=ttyS0 init=/sbin/tita-init panic=-1 tita.ip={vm_ip} "
                          f"tita.mtu={mtu}",
                "-drive", f"file={os.path.join(image_dir, 'root.img')},if=virtio,format=raw,snapshot=on",
                "-netdev", f"{data_netdev},id=data",
                "-device", "virtio-net-pci,netdev=data,mac=52:54:00:00:00:01",
                "-netdev", f"user,id=ctl,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:{agent_port}-:7000,{fwd}",
                "-device", "virtio-net-pci,netdev=ctl,mac=52:54:00:00:00:02",
                "-serial", f"file:{self.console}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.sock = None

    def wait_ready(self, timeout=240):
        """Connects to the agent (from inside the namespace) once the VM has booted."""
        until = time.time() + timeout
        while time.time() < until:
            if self.proc.poll() is not None:
                raise RuntimeError("qemu exited: " + self.proc.stderr.read().decode()[-2000:])
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.agent_port), timeout=5)
                self.sock.settimeout(None)
                self.rfile = self.sock.makefile("r")
                if self.call({"op": "ping"}).get("ok"):
                    return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"the VM did not come up in {timeout} s; console:\n" + self.console_tail())

    def console_tail(self, n=40):
        try:
            with open(self.console, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def call(self, req):
        self.sock.sendall((json.dumps(req) + "\n").encode())
        line = self.rfile.readline()
        if not line:
            raise RuntimeError("the VM's agent closed the connection; console:\n" + self.console_tail())
        return json.loads(line)

    def run(self, argv, timeout=120):
        return self.call({"op": "run", "argv": argv, "timeout": timeout})

    def sh(self, script, timeout=60):
        return self.run(["sh", "-c", script], timeout)

    def spawn(self, argv):
        return self.call({"op": "spawn", "argv": argv})["id"]

    def wait(self, pid, timeout=120):
        r = self.call({"op": "wait", "id": pid, "timeout": timeout})
        if r.get("rc") is None:
            r = self.call({"op": "kill", "id": pid})
            r["rc"] = "timeout"
        return r

    def close(self):
        # The root disk is a snapshot: nothing in the VM needs saving.
        if self.sock is not None:
            self.sock.close()
        self.proc.kill()
        self.proc.wait()
