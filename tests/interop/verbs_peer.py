#!/usr/bin/env python3
"""The data-checking peer of tests/verbs/verbs_check.c, written with pyverbs
(rdma-core's Python binding), for the side that tita does not run on: Linux
Soft-RoCE in a VM. It speaks verbs_check's two-process protocol, as either
role, so each direction is checked by both ends:

  verbs_peer.py --server [--port P] [--device rxe0] [--gid 1]
  verbs_peer.py --client HOST [--port P] ...

The client runs every opcode at every size (WRITEs read back, READs compared,
SENDs and immediates checked by the receiver) and 2000 fetch-and-adds from four
QPs on the peer's counter; the server posts a receive per message and checks
what arrives and, at the end, the counter. Exit 0 only if both sides found
nothing wrong.
"""
import argparse
import random
import socket
import struct
import sys
import time

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR
import pyverbs.enums as e

SIZES = [0, 1, 63, 64, 1023, 1024, 1025, 4095, 4096, 4097, 65536, 262144, 1048576]
K_WRITE, K_READ, K_SEND, K_SEND_IMM, K_WRITE_IMM = range(5)
NAMES = ["WRITE", "READ", "SEND", "SEND_WITH_IMM", "WRITE_WITH_IMM"]
BUF = 16 << 20
DST_OFF, BACK_OFF, RECV_OFF, RESULTS_OFF = 2 << 20, 4 << 20, 8 << 20, 13 << 20
ATOMIC_QPS, ATOMIC_ADDS = 4, 500
NQP = 1 + ATOMIC_QPS
PEER = struct.Struct("<II16sQQII")  # verbs_check.c's struct peer
TIMEOUT = 60
BLOCK = 4099

failures = []
checks = [0]


def check(cond, msg):
    checks[0] += 1
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, flush=True)


_blocks = {}


def pattern(length, seed):
    """verbs_check.c's fill(): a 4099-byte LCG block, repeated."""
    if seed not in _blocks:
        x = (seed * 2654435761 + 1) & 0xffffffff
        b = bytearray(BLOCK)
        for i in range(BLOCK):
            x = (x * 1103515245 + 12345) & 0xffffffff
            b[i] = (x >> 16) & 0xff
        _blocks[seed] = bytes(b)
    blk = _blocks[seed]
    return (blk * (length // BLOCK + 1))[:length]


def seed_of(kind, i):
    return 1000 * kind + i


def consumes_recv(kind):
    return kind in (K_SEND, K_SEND_IMM, K_WRITE_IMM)


def slot_off(kind, index, used):
    off = RECV_OFF
    for k in range(5):
        if not consumes_recv(k):
            continue
        for i in range(used):
            if k == kind and i == index:
                return off
            off += (SIZES[i] + 4095) & ~4095
            if SIZES[i] == 0:
                off += 4096
    return off


class Dev:
    def __init__(self, name, gid_index):
        self.ctx = Context(name=name)
        self.port = self.ctx.query_port(1)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        acc = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ |
               e.IBV_ACCESS_REMOTE_ATOMIC)
        self.mr = MR(self.pd, BUF, acc)
        self.counter_mr = MR(self.pd, 4096, acc)
        self.counter_mr.write(bytes(8), 8, 0)

    def qp(self):
        cq = CQ(self.ctx, 256)
        cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=4, max_recv_sge=4)
        qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap, sq_sig_all=1))
        return {"qp": qp, "cq": cq, "psn": random.getrandbits(24)}


def describe(d, q):
    gid = bytes.fromhex(d.gid.gid.replace(":", ""))
    return PEER.pack(q["qp"].qp_num, q["psn"], gid, d.mr.buf, d.counter_mr.buf, d.mr.rkey, d.counter_mr.rkey)


def connect(d, q, peer):
    qpn, psn, gid, _, _, _, _ = peer
    qp = q["qp"]
    a = QPAttr(qp_state=e.IBV_QPS_INIT)
    a.pkey_index = 0
    a.port_num = 1
    a.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(qp_state=e.IBV_QPS_RTR, path_mtu=d.port.active_mtu)
    a.dest_qp_num = qpn
    a.rq_psn = psn
    a.max_dest_rd_atomic = 16
    a.min_rnr_timer = 1
    hexs = gid.hex()
    gr = GlobalRoute(dgid=GID(":".join(hexs[i:i + 4] for i in range(0, 32, 4))), sgid_index=d.gid_index,
                     hop_limit=64)
    a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
              e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(qp_state=e.IBV_QPS_RTS)
    a.timeout = 14
    a.retry_cnt = 7
    a.rnr_retry = 7
    a.sq_psn = q["psn"]
    a.max_rd_atomic = 16
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN |
              e.IBV_QP_MAX_QP_RD_ATOMIC)


def wait_wc(cq, n=1):
    got = []
    until = time.time() + TIMEOUT
    while len(got) < n and time.time() < until:
        k, wcs = cq.poll(n - len(got))
        got += wcs
    return got


def post(d, q, opcode, off, length, remote=0, rkey=0, imm=0):
    sge = SGE(d.mr.buf + off, length, d.mr.lkey)
    wr = SendWR(opcode=opcode, num_sge=1, sg=[sge], imm_data=socket.htonl(imm) if imm else 0)
    if opcode in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_RDMA_READ):
        wr.set_wr_rdma(rkey, remote)
    q["qp"].post_send(wr)


def run_script(d, q, peer, used):
    _, _, _, addr, _, rkey, _ = peer
    for k in range(5):
        for i in range(used):
            n, seed = SIZES[i], seed_of(k, i)
            if n:
                d.mr.write(pattern(n, seed), n, 0)
            dst = addr + (slot_off(k, i, used) if k == K_WRITE_IMM else DST_OFF)
            if k == K_WRITE:
                post(d, q, e.IBV_WR_RDMA_WRITE, 0, n, dst, rkey)
            elif k == K_READ:
                if n:
                    d.mr.write(b"\xee" * n, n, BACK_OFF)
                post(d, q, e.IBV_WR_RDMA_READ, BACK_OFF, n, dst, rkey)
            elif k == K_SEND:
                post(d, q, e.IBV_WR_SEND, 0, n)
            elif k == K_SEND_IMM:
                post(d, q, e.IBV_WR_SEND_WITH_IMM, 0, n, imm=seed)
            else:
                post(d, q, e.IBV_WR_RDMA_WRITE_WITH_IMM, 0, n, dst, rkey, imm=seed)
            wc = wait_wc(q["cq"])
            ok = len(wc) == 1 and wc[0].status == e.IBV_WC_SUCCESS
            check(ok, f"{NAMES[k]} {n}: completion " + (str(wc[0].status) if wc else "missing"))
            if not ok:
                return
            if k == K_READ:
                got = d.mr.read(n, BACK_OFF) if n else b""
                check(got == pattern(n, seed_of(K_WRITE, used - 1)), f"READ {n}: bytes differ from what WRITE put")
            if k == K_WRITE:
                if n:
                    d.mr.write(b"\xee" * n, n, BACK_OFF)
                post(d, q, e.IBV_WR_RDMA_READ, BACK_OFF, n, dst, rkey)
                wc = wait_wc(q["cq"])
                got = d.mr.read(n, BACK_OFF) if n else b""
                check(len(wc) == 1 and wc[0].status == e.IBV_WC_SUCCESS and got == pattern(n, seed),
                      f"WRITE {n}: the bytes read back differ")


def run_atomics(d, qs, peers):
    total = ATOMIC_QPS * ATOMIC_ADDS
    posted = [0] * ATOMIC_QPS
    outstanding = [0] * ATOMIC_QPS
    done = 0
    until = time.time() + 4 * TIMEOUT
    while done < total and time.time() < until:
        for j, q in enumerate(qs):
            _, _, _, _, counter, _, crkey = peers[j]
            while posted[j] < ATOMIC_ADDS and outstanding[j] < 16:
                idx = j * ATOMIC_ADDS + posted[j]
                sge = SGE(d.mr.buf + RESULTS_OFF + 8 * idx, 8, d.mr.lkey)
                wr = SendWR(wr_id=idx, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1, sg=[sge])
                wr.set_wr_atomic(crkey, counter, 1, 0)
                q["qp"].post_send(wr)
                posted[j] += 1
                outstanding[j] += 1
            k, wcs = q["cq"].poll(16)
            for wc in wcs:
                check(wc.status == e.IBV_WC_SUCCESS, f"FETCH_AND_ADD: status {wc.status}")
                outstanding[j] -= 1
                done += 1
    check(done == total, f"atomics: {done} of {total} completed")
    raw = d.mr.read(8 * total, RESULTS_OFF)
    vals = struct.unpack(f"<{total}Q", raw)
    check(sorted(vals) == list(range(total)), "atomics: the values handed out are not 0..N-1 exactly once")
    # Compare-and-swap, a match and a mismatch.
    _, _, _, _, counter, _, crkey = peers[0]
    for compare, swap, want in ((total, 777, total), (1, 5, 777)):
        sge = SGE(d.mr.buf + RESULTS_OFF, 8, d.mr.lkey)
        wr = SendWR(opcode=e.IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1, sg=[sge])
        wr.set_wr_atomic(crkey, counter, compare, swap)
        qs[0]["qp"].post_send(wr)
        wc = wait_wc(qs[0]["cq"])
        orig = struct.unpack("<Q", d.mr.read(8, RESULTS_OFF))[0]
        check(len(wc) == 1 and wc[0].status == e.IBV_WC_SUCCESS and orig == want,
              f"CMP_AND_SWP({compare}->{swap}): original {orig}, want {want}")


def post_receives(d, q, used):
    n = 0
    for k in range(5):
        if not consumes_recv(k):
            continue
        for i in range(used):
            room = 0 if k == K_WRITE_IMM else (SIZES[i] + 4095) & ~4095
            sge = SGE(d.mr.buf + slot_off(k, i, used), room, d.mr.lkey)
            q["qp"].post_recv(RecvWR(wr_id=(k << 32) | i, num_sge=1, sg=[sge]))
            n += 1
    return n


def check_receives(d, q, expected, used):
    got = 0
    until = time.time() + 4 * TIMEOUT
    while got < expected and time.time() < until:
        k_, wcs = q["cq"].poll(1)
        for wc in wcs:
            got += 1
            k, i = wc.wr_id >> 32, wc.wr_id & 0xffffffff
            n, seed = SIZES[i], seed_of(k, i)
            what = f"receive for {NAMES[k]} {n}"
            check(wc.status == e.IBV_WC_SUCCESS, f"{what}: status {wc.status}")
            check(wc.byte_len == n, f"{what}: byte_len {wc.byte_len}")
            imm = k != K_SEND
            check(bool(wc.wc_flags & e.IBV_WC_WITH_IMM) == imm, f"{what}: IBV_WC_WITH_IMM")
            if imm:
                check(socket.ntohl(wc.imm_data) == seed, f"{what}: imm {socket.ntohl(wc.imm_data):#x}")
            want_op = e.IBV_WC_RECV_RDMA_WITH_IMM if k == K_WRITE_IMM else e.IBV_WC_RECV
            check(wc.opcode == want_op, f"{what}: opcode {wc.opcode}")
            data = d.mr.read(n, slot_off(k, i, used)) if n else b""
            check(data == pattern(n, seed), f"{what}: the bytes that arrived differ")
    check(got == expected, f"receives: {got} of {expected}")


def xfer(sock, out):
    sock.sendall(out)
    buf = b""
    while len(buf) < len(out):
        chunk = sock.recv(len(out) - len(buf))
        if not chunk:
            raise RuntimeError("the peer closed the connection")
        buf += chunk
    return buf


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--server", action="store_true")
    g.add_argument("--client")
    ap.add_argument("--port", type=int, default=18650)
    ap.add_argument("--device", default="rxe0")
    ap.add_argument("--gid", type=int, default=1)
    ap.add_argument("--sizes-max", type=int, default=1 << 20)
    a = ap.parse_args()
    used = sum(1 for s in SIZES if s <= a.sizes_max)
    d = Dev(a.device, a.gid)
    qs = [d.qp() for _ in range(NQP)]
    mine = b"".join(describe(d, q) for q in qs)
    if a.server:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", a.port))
        ls.listen(1)
        sock, _ = ls.accept()
    else:
        until = time.time() + TIMEOUT
        while True:
            try:
                sock = socket.create_connection((a.client, a.port))
                break
            except OSError:
                if time.time() > until:
                    raise
                time.sleep(0.2)
    theirs = xfer(sock, mine)
    peers = [PEER.unpack_from(theirs, i * PEER.size) for i in range(NQP)]
    for q, p in zip(qs, peers):
        connect(d, q, p)
    expected = post_receives(d, qs[0], used) if a.server else 0
    xfer(sock, b"\x01")
    if not a.server:
        run_script(d, qs[0], peers[0], used)
        run_atomics(d, qs[1:], peers[1:])
    else:
        check_receives(d, qs[0], expected, used)
    xfer(sock, b"\x01")
    if a.server:
        counter = struct.unpack("<Q", d.counter_mr.read(8, 0))[0]
        check(counter == 777, f"the atomic counter holds {counter}, want 777")
    theirs_failed = struct.unpack("<i", xfer(sock, struct.pack("<i", len(failures))))[0]
    sock.close()
    role = "server" if a.server else "client"
    print(f"verbs_peer --{role}: {checks[0]} checks, {len(failures)} failed here, {theirs_failed} on the peer")
    return 0 if not failures and theirs_failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
