#!/usr/bin/python3
"""Writes a training workload file (the SimAI/AICB format tita-sim's
--workload=training reads, doc/training.md) for a GPT-style dense model or a
T5-style MoE model, from the model's shape and a GPU's sustained FLOP rate.

    scripts/training/make_workload.py gpt --hidden 1024 --layers 4 --gpus 32 --tp 8 \\
        --tokens 2048 --ga 4 -o data/training/gpt-small.txt
    scripts/training/make_workload.py moe --hidden 1024 --layers 4 --gpus 32 --tp 1 --ep 32 ...

The model (one line per transformer layer and micro-batch; fp16, 2 bytes a value):
- compute per layer and micro-batch, per GPU: forward 24 t h^2 (1 + s / 6h) / tp
  FLOP at --tflops (t tokens of the micro-batch, s the sequence length); the
  input-gradient and the weight-gradient phases as much each;
- gpt: the forward and the input-gradient phases each end with a TP AllReduce of
  2 t h x 2 bytes (Megatron's two per layer, as one); the weight-gradient phase of
  the first micro-batch's copy (the last whose backward runs) reduces the layer's
  12 h^2 / tp parameters over DP (AllReduce); the other copies have none;
- moe: every other layer is an MoE layer (its MLP replaced by experts): its
  forward and input-gradient phases each exchange the micro-batch's tokens
  (t h x 2 bytes x top-k) in an EP All-to-All (dispatch and combine as one), its
  weight gradients (expert parameters) over the expert-data-parallel group when
  that has more than one rank; the attention layers as gpt's, their DP AllReduce
  of 4 h^2 / tp parameters (the attention's; the MLP is in the experts);
- update (in the first micro-batch's lines only: once an iteration): the
  layer's parameters read and written once (16 bytes each) at 2 TB/s.
ga micro-batches are written out (AICB's way): the file has ga x layers lines.
"""
import argparse
import sys

BYTES = 2  # fp16


def layer_compute_ns(tokens, seq, hidden, tp, tflops):
    flop = 24 * tokens * hidden * hidden * (1 + seq / (6 * hidden)) / tp
    return max(1, round(flop / (tflops * 1e12) * 1e9))


def update_ns(params):
    return max(1, round(params * 16 / 2e12 * 1e9))


def lines_for(a):
    tp, gpus = a.tp, a.gpus
    if gpus % tp:
        sys.exit(f"make_workload: --gpus {gpus} is not a multiple of --tp {tp}")
    dp = gpus // tp
    ep = a.ep if a.kind == "moe" else 1
    if dp % ep:
        sys.exit(f"make_workload: --ep {ep} does not divide dp {dp}")
    h, t = a.hidden, a.tokens
    comp = layer_compute_ns(t, a.seq, h, tp, a.tflops)
    tp_bytes = 2 * t * h * BYTES
    tp_coll = "ALLREDUCE" if tp > 1 else "NONE"
    out = []
    for mb in range(a.ga):
        for layer in range(a.layers):
            moe = a.kind == "moe" and layer % 2 == 1
            if moe:
                a2a = t * h * BYTES * a.topk
                params = 8 * h * h * a.experts // max(ep, 1) // tp  # this GPU's experts
                wg = ("ALLREDUCE_DP_EP", params * BYTES) if dp // ep > 1 and mb == 0 else ("NONE", 0)
                out.append((f"mb{mb}_moe{layer}", -1, comp, "ALLTOALL_EP", a2a, comp, "ALLTOALL_EP", a2a,
                            comp, wg[0], wg[1], update_ns(params) if mb == 0 else 0))
            else:
                params = (4 if a.kind == "moe" else 12) * h * h // tp
                wg = ("ALLREDUCE", params * BYTES) if dp > 1 and mb == 0 else ("NONE", 0)
                out.append((f"mb{mb}_layer{layer}", -1, comp, tp_coll, tp_bytes if tp > 1 else 0, comp, tp_coll,
                            tp_bytes if tp > 1 else 0, comp, wg[0], wg[1], update_ns(params) if mb == 0 else 0))
    header = (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: {ep} pp: 1 vpp: 1 "
              f"ga: {a.ga} all_gpus: {gpus} checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0")
    return header, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["gpt", "moe"])
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4, help="transformer layers")
    ap.add_argument("--gpus", type=int, default=32)
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--ep", type=int, default=1, help="moe: expert-parallel size")
    ap.add_argument("--experts", type=int, default=32, help="moe: experts per MoE layer")
    ap.add_argument("--topk", type=int, default=1, help="moe: experts per token")
    ap.add_argument("--tokens", type=int, default=2048, help="tokens per micro-batch")
    ap.add_argument("--seq", type=int, default=2048, help="sequence length")
    ap.add_argument("--ga", type=int, default=1, help="micro-batches per iteration")
    ap.add_argument("--tflops", type=float, default=150.0, help="sustained TFLOP/s of one GPU")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    header, rows = lines_for(a)
    text = header + "\n" + f"{len(rows)}\n" + "".join("\t".join(str(x) for x in r) + "\n" for r in rows)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
