"""Attention alone, side by side in one process on the GPU machine: our runtime (a package of one SDPA call lowered
with attention_backend CUDNN, i.e. the cuDNN shims, with TRITON, our Triton kernel in the package, and with MATH,
the decomposition) against torch's own SDPA
(cuDNN and flash backends) and torch.compile(mode="max-autotune"), with and without CUDA graphs, and the peak device
memory of each.

Usage: python3 benchmarks/attention.py [--out FILE_OR_DIR] [--seq 128,512,2048,8192] [--masks causal,additive]
       [--variants ...] [--iters N] [--profile]

Rows: one per (T, mask, variant, graphs): B=2, H=16, D=128, bfloat16, q/k/v [B, H, T, D]; mask `causal`
(is_causal=True) or `additive` (a [B, 1, 1, T] key-padding bias, 20% of keys masked). Variants: ours_cudnn,
ours_triton, ours_math (aotirt.compile + aotirt.load; graphs: aotirt.capture with alias_inputs=True, so that like the
torch.cuda.graph rows it reads the inputs it captured and copies none), torch_cudnn, torch_flash (torch.nn.functional
.scaled_dot_product_attention under sdpa_kernel([...]); graphs: torch.cuda.graph; flash takes no additive mask),
torch_compile (torch.compile(mode="max-autotune") of the same function; graphs are its own cudagraph trees, so its
rows are graphs=True only). Each row: median ms per call over --iters timed calls (CUDA events around each: the
host's time to the first kernel included), ms per call of 20 back-to-back calls (ms_pipelined: GPU throughput), peak
device memory above the inputs (torch.cuda.max_memory_allocated for torch rows; the device's used memory for ours,
whose allocations torch does not see), and max |diff| against float32 math. Writes FILE (default
benchmarks/results/attention.json): {"commit", "machine", "rows": [{T, mask, variant, graphs, ms, ms_pipelined,
peak_mb, max_abs_diff}], "summary"}; prints a markdown table. Targets (issue 13): at T=8192 ours_cudnn within 10% of
torch_cudnn; with graphs our best <= 1.00x the faster of torch_compile and the best torch eager+graph per row.

First H200 run: 995cda4 (benchmarks/RESULTS.md), before ms_pipelined and --profile existed.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cliflags import Flags, csv, positive_int  # noqa: E402
from provenance import commit  # noqa: E402
from sidebyside import (best_against_peers, cell, device_used_mb, subset, timed_row, torch_graph,  # noqa: E402
                        write_result)

VARIANTS = ("ours_cudnn", "ours_triton", "ours_math", "torch_cudnn", "torch_flash", "torch_compile")
MASKS = ("causal", "additive")
B, H, D = 2, 16, 128


def parse_args(argv=None):
    f = Flags("benchmarks/attention.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(HERE, "results", "attention.json"), "attention.json path, or a directory")
    f.define("seq", (128, 512, 2048, 8192), "comma-separated sequence lengths", lambda t: tuple(
        positive_int(x) for x in csv(t)), "list")
    f.define("masks", MASKS, f"comma-separated masks: {','.join(MASKS)}", lambda t: subset(csv(t), MASKS, "mask"),
             "list")
    f.define("variants", VARIANTS, f"comma-separated variants: {','.join(VARIANTS)}",
             lambda t: subset(csv(t), VARIANTS, "variant"), "list")
    f.define("iters", 50, "timed calls per row", positive_int, "integer")
    f.boolean("profile", False, "also print each row's GPU kernels and host calls (torch.profiler, 5 calls): where "
              "the time goes")
    return f.parse(argv)


def cases(seq: tuple, masks: tuple, variants: tuple) -> list:
    """(T, mask, variant, graphs) rows to measure, in measuring order; flash takes no additive mask and
    torch.compile's rows are graphs only (its cudagraph trees)."""
    out = []
    for t in seq:
        for mask in masks:
            for v in variants:
                if v == "torch_flash" and mask == "additive":
                    continue
                for graphs in ((True,) if v == "torch_compile" else (False, True)):
                    out.append((t, mask, v, graphs))
    return out


def summarize(rows: list) -> dict:
    """Per (T, mask): ours' best with graphs against the fastest peer with graphs (sidebyside.best_against_peers), and
    ours_cudnn against torch_cudnn."""
    out = {}
    for t, mask in sorted({(r["T"], r["mask"]) for r in rows}):
        sel = [r for r in rows if r["T"] == t and r["mask"] == mask and r["graphs"] and r.get("ms") is not None]
        entry = best_against_peers(sel)
        if entry is None:
            continue
        cud = [r for r in sel if r["variant"] == "ours_cudnn"]
        tcud = [r for r in sel if r["variant"] == "torch_cudnn"]
        if cud and tcud:
            entry["cudnn_vs_torch_cudnn"] = cud[0]["ms"] / tcud[0]["ms"]
        out[f"T={t},{mask}"] = entry
    return out


def markdown(rows: list) -> str:
    lines = ["| T | mask | variant | graphs | ms | ms back-to-back | peak MB | max abs diff |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        note = f" ({r['error']})" if r.get("error") else ""
        lines.append(f"| {r['T']} | {r['mask']} | {r['variant']} | {r['graphs']} | {cell(r, 'ms', '.3f')}{note} | "
                     f"{cell(r, 'ms_pipelined', '.3f')} | {cell(r, 'peak_mb', '.0f')} | {cell(r, 'max_abs_diff', '.3g')} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- GPU side

def _inputs(torch, t: int, mask: str):
    g = torch.Generator(device="cuda").manual_seed(t)
    q, k, v = (torch.randn(B, H, t, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    if mask == "causal":
        return (q, k, v)
    keep = torch.rand(B, 1, 1, t, device="cuda", generator=g) < 0.8
    keep[..., 0] = True
    bias = torch.zeros(B, 1, 1, t, device="cuda", dtype=torch.bfloat16).masked_fill(~keep, float("-inf"))
    return (q, k, v, bias)


def _fn(torch, mask: str):
    F = torch.nn.functional
    if mask == "causal":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return lambda q, k, v, bias: F.scaled_dot_product_attention(q, k, v, attn_mask=bias)


def measure(args) -> list:
    import torch
    import aotirt
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows, packages = [], {}
    tmp = tempfile.mkdtemp(prefix="aotirt_attention_")
    for t, mask, variant, graphs in cases(args.seq, args.masks, args.variants):
        xs = _inputs(torch, t, mask)
        fn = _fn(torch, mask)
        with torch.no_grad():
            ref = fn(*(x.float() for x in xs))
        row = {"T": t, "mask": mask, "variant": variant, "graphs": graphs, "ms": None, "peak_mb": None,
               "max_abs_diff": None}
        label = f"T={t} {mask} {variant}{' graph' if graphs else ''}" if args.profile else None
        try:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base_alloc, base_used = torch.cuda.memory_allocated(), device_used_mb(torch)
            if variant.startswith("ours_"):
                backend = variant[len("ours_"):].upper()  # CUDNN, TRITON, MATH
                key = (t, mask, backend)
                if key not in packages:
                    class M(torch.nn.Module):
                        def forward(self, *a):
                            return fn(*a)
                    path = os.path.join(tmp, f"attn_{t}_{mask}_{backend}.pt2")
                    t0 = time.time()
                    aotirt.compile(M(), xs, path, options=aotirt.CompileOptions(max_autotune=False,
                                                                                 attention_backend=backend))
                    print(f"compiled {path} in {time.time() - t0:.0f} s", flush=True)
                    packages[key] = path
                runner = aotirt.load(packages[key])
                call = aotirt.capture(runner, *xs, alias_inputs=True) if graphs else (lambda: runner(*xs))
                target = call if not graphs else (lambda: call(*xs))
                timed_row(torch, row, target, ref, args.iters, label)
                row["peak_mb"] = device_used_mb(torch) - base_used
            else:
                if variant == "torch_compile":
                    compiled = torch.compile(fn, mode="max-autotune")
                    target = lambda: compiled(*xs)
                else:
                    kind = SDPBackend.CUDNN_ATTENTION if variant == "torch_cudnn" else SDPBackend.FLASH_ATTENTION

                    def eager():
                        with sdpa_kernel([kind]):
                            return fn(*xs)
                    target = torch_graph(torch, eager) if graphs else eager
                timed_row(torch, row, target, ref, args.iters, label)
                row["peak_mb"] = (torch.cuda.max_memory_allocated() - base_alloc) / 2**20
        except Exception as e:  # a row that fails is recorded with its reason, the others still run
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    rows = measure(args)
    result = {"commit": commit(), "machine": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "command": " ".join(sys.argv), "shape": {"B": B, "H": H, "D": D, "dtype": "bfloat16"}, "rows": rows,
              "summary": summarize(rows)}
    return write_result(args.out, "attention.json", result, markdown(rows))


if __name__ == "__main__":
    sys.exit(main())
