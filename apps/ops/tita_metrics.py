"""tita's Prometheus metrics: one table from the counters tita's processes publish
over rte_telemetry (/tita/... of every engine, /tita_switch/... of tita-switch)
to metric names and labels that follow Prometheus' conventions (base units:
bytes, seconds; counters end in _total; one metric per quantity, its variants
as labels). tita-exporter serves them; doc/operations.md lists them.

    fams = collect(telemetry, process="demo-tx0")   # {name: Family}
"""
from dataclasses import dataclass, field

NS = 1e-9


@dataclass
class Family:
    name: str  # without _total for counters
    kind: str  # "counter" or "gauge"
    help: str
    labels: tuple
    samples: list = field(default_factory=list)  # (label values, value)


# QP: telemetry key -> (metric, kind, help, scale). Labels: process, engine, qpn.
QP_SCALARS = {
    "rate_bps": ("tita_qp_rate_bytes_per_second", "gauge", "Sending rate congestion control allows", 1 / 8),
    "cwnd_bytes": ("tita_qp_window_bytes", "gauge", "Congestion window (0: rate-based only)", 1),
    "inflight_bytes": ("tita_qp_inflight_bytes", "gauge", "Bytes sent and not yet acknowledged", 1),
    "last_rtt_ns": ("tita_qp_rtt_seconds", "gauge", "Last round-trip time sample", NS),
    "send_queue_depth": ("tita_qp_send_queue_wrs", "gauge", "Work requests posted and not completed", 1),
    "recv_queue_depth": ("tita_qp_recv_queue_wrs", "gauge", "Receive work requests posted", 1),
    "tx_packets": ("tita_qp_tx_packets", "counter", "Packets sent (data, ACKs, NAKs, CNPs)", 1),
    "tx_data_packets": ("tita_qp_tx_data_packets", "counter", "Data packets sent, retransmissions included", 1),
    "tx_payload_bytes": ("tita_qp_tx_payload_bytes", "counter", "Payload bytes sent", 1),
    "rx_packets": ("tita_qp_rx_packets", "counter", "Packets received", 1),
    "rx_payload_bytes": ("tita_qp_rx_payload_bytes", "counter", "Payload bytes received", 1),
    "retransmitted_packets": ("tita_qp_retransmitted_packets", "counter", "Data packets sent again", 1),
    "timeouts": ("tita_qp_timeouts", "counter", "Retransmission timeouts", 1),
    "acks_sent": ("tita_qp_acks_sent", "counter", "ACKs sent", 1),
    "acks_received": ("tita_qp_acks_received", "counter", "ACKs received", 1),
    "duplicates_received": ("tita_qp_duplicate_packets_received", "counter", "Duplicate requests received", 1),
    "out_of_order_received": ("tita_qp_out_of_order_packets_received", "counter",
                              "Requests received ahead of the expected PSN", 1),
    "read_rerequests": ("tita_qp_read_rerequests", "counter", "READ requests asked again (a hole, or the rest after a timeout)", 1),
    "loss_window_cuts": ("tita_qp_loss_window_cuts", "counter", "Losses and timeouts that cut the loss window", 1),
    "tail_probes": ("tita_qp_tail_probes", "counter",
                    "Silent tails resent after a few round trips, before the IBA timeout", 1),
    "retry_exceeded": ("tita_qp_retry_exceeded", "counter", "QPs that ended in RETRY_EXC_ERR (no progress for retry_cnt tries)", 1),
    "read_jobs_dropped": ("tita_qp_read_jobs_dropped", "counter",
                          "READ answers dropped behind a READ a go-back-N peer asked again", 1),
    "read_jobs_superseded": ("tita_qp_read_jobs_superseded", "counter",
                             "READs answered in full once and asked again, dropped for a new READ (ring full)", 1),
    "sr_fallbacks": ("tita_qp_selective_repeat_fallbacks", "counter",
                     "Selective repeat set but the peer speaks no tita trailer: go-back-N", 1),
    "ecn_ce_received": ("tita_qp_ecn_ce_packets_received", "counter", "Packets received with ECN CE", 1),
    "cnps_sent": ("tita_qp_cnps_sent", "counter", "Congestion notification packets sent", 1),
    "cnps_received": ("tita_qp_cnps_received", "counter",
                      "CNPs received (or ACKs echoing CE, in ACK-echo mode)", 1),
    "int_records_received": ("tita_qp_int_records_received", "counter", "INT hop records echoed to this sender", 1),
    "rtt_samples": ("tita_qp_rtt_samples", "counter", "RTT samples taken", 1),
    "path_follows": ("tita_qp_path_follows", "counter", "Responses moved to the peer's new path (dodge value)", 1),
    "ack_path_shifts": ("tita_qp_ack_path_shifts", "counter",
                        "Responses moved to another path by a round of duplicate requests", 1),
}
# NAKs by kind and direction: (telemetry key, direction, kind).
QP_NAKS = [("nak_seq_sent", "sent", "sequence"), ("nak_seq_received", "received", "sequence"),
           ("rnr_nak_sent", "sent", "rnr"), ("rnr_nak_received", "received", "rnr"),
           ("nak_access_sent", "sent", "access"), ("nak_access_received", "received", "access"),
           ("nak_invalid_sent", "sent", "invalid"), ("nak_invalid_received", "received", "invalid")]
QP_DODGE_REASONS = ["timeout", "stall", "loss", "throughput", "manual"]

ENGINE_SCALARS = {
    "qps": ("tita_engine_qps", "gauge", "QPs the engine holds", 1),
    "rx_frames": ("tita_engine_rx_frames", "counter", "Frames received", 1),
    "tx_frames": ("tita_engine_tx_frames", "counter", "Frames sent", 1),
    "control_ring_full": ("tita_engine_control_frames_dropped", "counter",
                          "ACK/NAK/CNP frames dropped: no transmit room for long", 1),
    "ooo_pool_full": ("tita_engine_out_of_order_dropped", "counter",
                      "Out-of-order frames dropped: no slot (selective repeat)", 1),
    "host_polls": ("tita_host_polls", "counter", "Poll loop iterations of the host", 1),
    "host_tx_zero_copy": ("tita_host_tx_zero_copy_frames", "counter", "Frames sent with external-buffer payload", 1),
    "host_tx_copied": ("tita_host_tx_copied_frames", "counter", "Frames whose payload was copied into mbufs", 1),
    "host_holds_out": ("tita_host_zero_copy_held_frames", "gauge",
                       "Zero-copy frames the port has not freed yet (their WRs' completions wait)", 1),
    "host_holds_released": ("tita_host_zero_copy_released_frames", "counter",
                            "Zero-copy frames the port has freed, their holds released", 1),
    "host_tx_holds_full": ("tita_host_tx_holds_full_frames", "counter",
                           "Frames copied because every zero-copy hold record was out", 1),
    "completions_held": ("tita_engine_completions_held", "counter",
                         "Send WRs acknowledged whose completion waited for the port to free their payload", 1),
    "host_rx_linearized": ("tita_host_rx_linearized_frames", "counter", "Chained mbufs copied for the parser", 1),
    "host_late_polls": ("tita_host_late_polls", "counter",
                        "Polls more than 1 ms after the engine's next deadline (the host did not run)", 1),
    "host_late_ns": ("tita_host_late_seconds", "counter", "Time those polls came late", NS),
    "host_rx_pfc_pauses": ("tita_host_pfc_pauses_received", "counter", "PFC frames that paused a priority", 1),
    "host_rx_pfc_resumes": ("tita_host_pfc_resumes_received", "counter", "PFC frames that resumed a priority", 1),
    "host_pfc_held": ("tita_host_pfc_held_bursts", "counter",
                      "Transmit bursts in which a paused priority's frames waited", 1),
    "host_tx_pfc_frames": ("tita_host_pfc_frames_sent", "counter",
                           "PFC frames the host sent (only tita-perf --inject-fault pfc-storm sends any)", 1),
    "arp_requests_sent": ("tita_engine_arp_requests_sent", "counter", "ARP requests sent", 1),
    "arp_received": ("tita_engine_arp_received", "counter", "ARP requests for us and replies received", 1),
    "arp_failures": ("tita_engine_arp_failures", "counter", "Addresses that never answered ARP", 1),
}
ENGINE_HOST_DROPS = {"host_tx_no_mbuf": "no_mbuf", "host_tx_oversize": "oversize"}
# The host's DPDK port, as its driver counts (rte_eth_stats): once per port of a
# process, however many engines share it. Labels: process, port.
HOST_PORT_SCALARS = {
    "port_rx_missed": ("tita_host_port_rx_missed_packets", "counter",
                       "Frames the host's port dropped on arrival: receive queue full or no mbuf (imissed + "
                       "rx_nombuf; drivers that do not count them report 0)", 1),
    "port_rx_errors": ("tita_host_port_rx_errors_packets", "counter", "Frames the host's port received in error", 1),
    "port_tx_errors": ("tita_host_port_tx_errors_packets", "counter",
                       "Frames the host's port took and failed to send", 1),
}

PORT_SCALARS = {
    "rate_mbps": ("tita_switch_port_speed_bytes_per_second", "gauge", "Port rate (shaped or link)", 1e6 / 8),
    "rx_packets": ("tita_switch_port_rx_packets", "counter", "Packets received", 1),
    "rx_bytes": ("tita_switch_port_rx_bytes", "counter", "Bytes received", 1),
    "tx_packets": ("tita_switch_port_tx_packets", "counter", "Packets sent", 1),
    "tx_bytes": ("tita_switch_port_tx_bytes", "counter", "Bytes sent", 1),
    "int_pushed": ("tita_switch_int_records", "counter", "INT hop records added to packets leaving the port", 1),
    "int_overflowed": ("tita_switch_int_overflows", "counter", "Packets whose INT stack was full", 1),
    "pfc_frames_sent": ("tita_switch_pfc_frames_sent", "counter", "PFC frames sent (pause and resume)", 1),
    "pfc_frames_received": ("tita_switch_pfc_frames_received", "counter", "PFC frames received", 1),
    "pmd_rx_missed": ("tita_switch_pmd_rx_missed_packets", "counter",
                      "Packets the port dropped for lack of descriptors or buffers", 1),
    "pmd_tx_dropped": ("tita_switch_pmd_tx_dropped_packets", "counter", "Packets the port did not take", 1),
}
QUEUE_SCALARS = {
    "qlen_bytes": ("tita_switch_queue_bytes", "gauge", "Egress queue length", 1),
    "max_qlen_bytes": ("tita_switch_queue_max_bytes", "gauge", "Longest the egress queue has been", 1),
    "enqueued_packets": ("tita_switch_queue_enqueued_packets", "counter", "Packets queued", 1),
    "dequeued_packets": ("tita_switch_queue_dequeued_packets", "counter", "Packets sent from the queue", 1),
    "dequeued_bytes": ("tita_switch_queue_dequeued_bytes", "counter", "Bytes sent from the queue", 1),
    "ecn_marked": ("tita_switch_ecn_marked_packets", "counter", "Packets marked ECN CE", 1),
    "pfc_pause_sent": ("tita_switch_pfc_pauses_sent", "counter", "PFC pauses sent for this priority", 1),
    "pfc_pause_received": ("tita_switch_pfc_pauses_received", "counter", "PFC pauses received for this priority", 1),
}
SWITCH_SCALARS = {
    "buffer_bytes": ("tita_switch_buffer_bytes", "gauge", "Packet buffer size", 1),
    "buffer_used_bytes": ("tita_switch_buffer_used_bytes", "gauge", "Packet buffer in use", 1),
    "shared_bytes": ("tita_switch_shared_buffer_bytes", "gauge", "Shared part of the buffer", 1),
    "shared_used_bytes": ("tita_switch_shared_buffer_used_bytes", "gauge", "Shared buffer in use", 1),
    "held_packets": ("tita_switch_held_packets", "gauge", "Packets in the switch", 1),
    "uptime_ms": ("tita_switch_uptime_seconds", "gauge", "Time since the switch started", 1e-3),
}


class Families(dict):
    def add(self, name, kind, help_, labels, values, value):
        f = self.get(name)
        if f is None:
            f = self[name] = Family(name, kind, help_, tuple(labels))
        f.samples.append((tuple(values), float(value)))


def _scalars(fams, table, d, labels, values):
    for key, (name, kind, help_, scale) in table.items():
        if key in d and isinstance(d[key], (int, float)):
            fams.add(name, kind, help_, labels, values, d[key] * scale)


def _by_reason(fams, d, prefix, name, help_, labels, values):
    """Counters keyed "<prefix><reason>" in d, as one metric with a reason label."""
    for key, v in d.items():
        if key.startswith(prefix):
            fams.add(name, "counter", help_, labels + ("reason",), values + (key[len(prefix):],), v)


def collect_engines(t, process, fams):
    """Every engine and QP of one process (tita-perf, a verbs program, ...)."""
    ports = set()
    for eid in t.query("/tita/engines") or []:
        e = t.query(f"/tita/engine,{eid}")
        if not isinstance(e, dict):
            continue
        engine = e.get("name", str(eid))
        labels, values = ("process", "engine"), (process, engine)
        _scalars(fams, ENGINE_SCALARS, e, labels, values)
        if "port" in e and e.get("port_id") not in ports:
            ports.add(e.get("port_id"))
            _scalars(fams, HOST_PORT_SCALARS, e, ("process", "port"), (process, e["port"]))
        _by_reason(fams, e, "rx_drop_", "tita_engine_rx_dropped_frames", "Frames dropped on arrival, by reason",
                   labels, values)
        for key, reason in ENGINE_HOST_DROPS.items():
            if key in e:
                fams.add("tita_host_tx_dropped_frames", "counter", "Frames the host could not send, by reason",
                         labels + ("reason",), values + (reason,), e[key])
        for qpn in t.query(f"/tita/qps,{eid}") or []:
            q = t.query(f"/tita/qp,{eid},{qpn}")
            if not isinstance(q, dict):
                continue
            ql, qv = labels + ("qpn",), values + (f"0x{qpn:06x}",)
            fams.add("tita_qp_info", "gauge", "A QP, its state and congestion control (value 1)",
                     ql + ("state", "cc"), qv + (q.get("state", ""), q.get("cc", "")), 1)
            _scalars(fams, QP_SCALARS, q, ql, qv)
            for key, direction, kind in QP_NAKS:
                if key in q:
                    fams.add(f"tita_qp_naks_{direction}", "counter", f"NAKs {direction}, by kind",
                             ql + ("kind",), qv + (kind,), q[key])
            for reason in QP_DODGE_REASONS:
                key = f"path_changes_{reason}"
                if key in q:
                    fams.add("tita_qp_path_changes", "counter", "Path changes (Hash Dodging), by reason",
                             ql + ("reason",), qv + (reason,), q[key])


def collect_switch(t, process, fams):
    """Every port and priority queue of a tita-switch."""
    ports = t.query("/tita_switch/ports")
    if ports is None:
        return
    stats = t.query("/tita_switch/stats") or {}
    _scalars(fams, SWITCH_SCALARS, stats, ("process",), (process,))
    for i in ports:
        p = t.query(f"/tita_switch/port,{i}")
        if not isinstance(p, dict):
            continue
        port = p.get("name", str(i))
        labels, values = ("process", "port"), (process, port)
        _scalars(fams, PORT_SCALARS, p, labels, values)
        _by_reason(fams, p, "drop_", "tita_switch_dropped_packets", "Packets dropped, by reason", labels, values)
        queues = t.query(f"/tita_switch/queues,{i}") or {}
        for qname, q in queues.items():
            if isinstance(q, dict) and qname.startswith("priority_"):
                _scalars(fams, QUEUE_SCALARS, q, labels + ("priority",), values + (qname[len("priority_"):],))


def collect(t, process):
    """The metric families of one process, whatever it runs (engines, a switch)."""
    fams = Families()
    collect_engines(t, process, fams)
    collect_switch(t, process, fams)
    return fams


def catalogue():
    """(metric, type, labels, help) of every metric, for --list and the docs."""
    rows = [("tita_process_up", "gauge", "process", "1 if the process's telemetry socket answered"),
            ("tita_qp_info", "gauge", "process, engine, qpn, state, cc",
             "A QP, its state and congestion control (value 1)")]
    qp = "process, engine, qpn"
    def table(t, labels):
        for name, kind, help_, _ in t.values():
            rows.append((name + ("_total" if kind == "counter" else ""), kind, labels, help_))
    table(QP_SCALARS, qp)
    rows.append(("tita_qp_naks_sent_total", "counter", qp + ", kind", "NAKs sent: sequence, rnr, access, invalid"))
    rows.append(("tita_qp_naks_received_total", "counter", qp + ", kind", "NAKs received: sequence, rnr, access, invalid"))
    rows.append(("tita_qp_path_changes_total", "counter", qp + ", reason",
                 "Path changes (Hash Dodging): " + ", ".join(QP_DODGE_REASONS)))
    table(ENGINE_SCALARS, "process, engine")
    rows.append(("tita_engine_rx_dropped_frames_total", "counter", "process, engine, reason",
                 "Frames dropped on arrival, by reason (parse errors, bad_icrc, unknown_qp, not_for_us, ...)"))
    rows.append(("tita_host_tx_dropped_frames_total", "counter", "process, engine, reason",
                 "Frames the host could not send: no_mbuf, oversize"))
    table(HOST_PORT_SCALARS, "process, port")
    table(SWITCH_SCALARS, "process")
    table(PORT_SCALARS, "process, port")
    rows.append(("tita_switch_dropped_packets_total", "counter", "process, port, reason",
                 "Packets dropped, by reason (buffer_full, headroom_full, no_route, fault_random, ...)"))
    table(QUEUE_SCALARS, "process, port, priority")
    return rows


class SimNode:
    """One tita-sim node of one metrics.jsonl sample, answering the telemetry
    commands a live process of the same kind would: a host's engine and QPs,
    or a switch's ports and queues (what tita-sim --metrics writes)."""

    def __init__(self, engine=None, qps=(), ports=()):
        self.engine, self.qps, self.ports = engine, list(qps), list(ports)

    def query(self, cmd):
        parts = cmd.split(",")
        if parts[0] == "/tita/engines":
            return [0] if self.engine else []
        if parts[0] == "/tita/engine":
            return {"name": self.engine}
        if parts[0] == "/tita/qps":
            return [q["qpn"] for q in self.qps]
        if parts[0] == "/tita/qp":
            return next((q for q in self.qps if q["qpn"] == int(parts[2])), None)
        if parts[0] == "/tita_switch/ports":
            return list(range(len(self.ports))) if self.ports else None
        if parts[0] == "/tita_switch/port":
            return {k: v for k, v in self.ports[int(parts[1])].items() if k != "queues"}
        if parts[0] == "/tita_switch/queues":
            return self.ports[int(parts[1])].get("queues", {})
        return None


def sim_nodes(sample):
    """{process name: SimNode} of one metrics.jsonl line: a host is a process
    with one engine (named after it), a switch one with its ports."""
    nodes = {}
    for q in sample.get("qps", []):
        nodes.setdefault(q["engine"], SimNode(engine=q["engine"])).qps.append(q)
    for p in sample.get("ports", []):
        nodes.setdefault(p["switch"], SimNode()).ports.append(p)
    return nodes
