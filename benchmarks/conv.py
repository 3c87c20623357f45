"""Convolutions alone, side by side in one process on the GPU machine: our runtime (a package of one nn.Conv2d /
ConvTranspose2d lowered three ways: max_autotune OFF, i.e. the cuDNN shim aoti_torch_cuda_convolution; max_autotune
with max_autotune_conv_backends TRITON, Inductor's Triton conv templates; and ATEN,TRITON, Inductor's autotuned pick
between the two) against torch's own cuDNN (eager) and torch.compile(mode="max-autotune"), with and without CUDA
graphs, and the peak device memory of each.

Usage: python3 benchmarks/conv.py [--out FILE_OR_DIR] [--layers r50_3x3_56,...] [--variants ...] [--batch N]
       [--dtype bf16|fp32] [--iters N] [--profile]

Rows: one per (layer, variant, graphs). Layers (ResNet-50-like unless named otherwise, channels-last inputs as torch
users run CNNs, bias on): r50_stem (3->64, 7x7 s2 p3, 224^2), r50_1x1_56 (64->256, 1x1, 56^2), r50_3x3_56 (64->64,
3x3 p1, 56^2), r50_3x3_s2 (128->128, 3x3 s2 p1, 56^2 -> 28^2), r50_3x3_14 (256->256, 3x3 p1, 14^2), dw_3x3_56
(MobileNet-like depthwise 144 channels, 3x3 p1, 56^2), convT_up2 (256->128 transposed, 4x4 s2 p1, 32^2 -> 64^2).
Variants: ours_cudnn (max_autotune OFF), ours_triton (max_autotune, conv backends TRITON), ours_aten_triton
(max_autotune, conv backends ATEN,TRITON); their graph rows are aotirt.capture with alias_inputs=True (they read the
captured input, as the torch.cuda.graph rows do); torch_cudnn (eager; graphs: torch.cuda.graph), torch_compile (its
cudagraph trees: graphs rows only). Each row: median ms of --iters single calls (events around each, the host's time
to the first kernel included), ms per call of 20 back-to-back calls (ms_pipelined), peak device memory above the
inputs, max |diff| against float32 eager without TF32. Writes FILE (default benchmarks/results/conv.json): {"commit",
"machine", "rows", "summary"}; prints a markdown table. Target (issue 13): with graphs our best <= 1.00x the faster of
torch_compile and torch_cudnn + graph per layer; it decides max_autotune_conv_backends' default.

First H200 run: 9bc4bc0 (benchmarks/RESULTS.md), ours_cudnn and torch_cudnn only.
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

# name -> (in_channels, out_channels, kernel, stride, padding, groups, transposed, spatial)
LAYERS = {
    "r50_stem": (3, 64, 7, 2, 3, 1, False, 224),
    "r50_1x1_56": (64, 256, 1, 1, 0, 1, False, 56),
    "r50_3x3_56": (64, 64, 3, 1, 1, 1, False, 56),
    "r50_3x3_s2": (128, 128, 3, 2, 1, 1, False, 56),
    "r50_3x3_14": (256, 256, 3, 1, 1, 1, False, 14),
    "dw_3x3_56": (144, 144, 3, 1, 1, 144, False, 56),
    "convT_up2": (256, 128, 4, 2, 1, 1, True, 32),
}
# variant -> aotirt CompileOptions fields (ours) or None (torch's)
OURS = {
    "ours_cudnn": dict(max_autotune=False),
    "ours_triton": dict(max_autotune=True, max_autotune_gemm_backends="TRITON", max_autotune_conv_backends="TRITON"),
    "ours_aten_triton": dict(max_autotune=True, max_autotune_gemm_backends="ATEN,TRITON",
                             max_autotune_conv_backends="ATEN,TRITON"),
}
VARIANTS = (*OURS, "torch_cudnn", "torch_compile")
DTYPES = ("bf16", "fp32")


def parse_args(argv=None):
    f = Flags("benchmarks/conv.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(HERE, "results", "conv.json"), "conv.json path, or a directory")
    f.define("layers", tuple(LAYERS), f"comma-separated layers: {','.join(LAYERS)}",
             lambda t: subset(csv(t), tuple(LAYERS), "layer"), "list")
    f.define("variants", VARIANTS, f"comma-separated variants: {','.join(VARIANTS)}",
             lambda t: subset(csv(t), VARIANTS, "variant"), "list")
    f.define("batch", 16, "batch size", positive_int, "integer")
    f.enum("dtype", "bf16", DTYPES, "bf16 (default) or fp32 (full precision on every side: TF32 off)")
    f.define("iters", 50, "timed calls per row", positive_int, "integer")
    f.boolean("profile", False, "also print each row's GPU kernels and host calls (torch.profiler, 5 calls)")
    return f.parse(argv)


def cases(layers: tuple, variants: tuple) -> list:
    """(layer, variant, graphs) rows in measuring order; torch.compile's rows are graphs only (its cudagraph trees);
    the Triton conv templates take no transposed convolution, so ours_triton has no convT row."""
    out = []
    for layer in layers:
        transposed = LAYERS[layer][6]
        for v in variants:
            if v == "ours_triton" and transposed:
                continue
            for graphs in ((True,) if v == "torch_compile" else (False, True)):
                out.append((layer, v, graphs))
    return out


def summarize(rows: list) -> dict:
    """Per layer: ours' best with graphs against the fastest peer with graphs (and back to back)."""
    out = {}
    for layer in dict.fromkeys(r["layer"] for r in rows):
        entry = best_against_peers([r for r in rows if r["layer"] == layer and r["graphs"]])
        if entry is not None:
            out[layer] = entry
    return out


def markdown(rows: list) -> str:
    lines = ["| layer | variant | graphs | ms | ms back-to-back | peak MB | max abs diff |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        note = f" ({r['error']})" if r.get("error") else ""
        lines.append(f"| {r['layer']} | {r['variant']} | {r['graphs']} | {cell(r, 'ms', '.3f')}{note} | "
                     f"{cell(r, 'ms_pipelined', '.3f')} | {cell(r, 'peak_mb', '.0f')} | {cell(r, 'max_abs_diff', '.3g')} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- GPU side

def _module(torch, layer: str):
    cin, cout, k, s, p, g, transposed, _ = LAYERS[layer]
    torch.manual_seed(0)
    cls = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
    return cls(cin, cout, k, stride=s, padding=p, groups=g, bias=True)


def _input(torch, layer: str, batch: int, dtype):
    cin, spatial = LAYERS[layer][0], LAYERS[layer][7]
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(batch, cin, spatial, spatial, device="cuda", generator=g)
    return x.to(dtype).contiguous(memory_format=torch.channels_last)


def measure(args) -> list:
    import torch
    import aotirt

    torch.backends.cudnn.allow_tf32 = False  # fp32 means fp32 on every side (the shim runs fp32 without TF32)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    rows, packages = [], {}
    tmp = tempfile.mkdtemp(prefix="aotirt_conv_")
    for layer, variant, graphs in cases(args.layers, args.variants):
        x = _input(torch, layer, args.batch, dtype)
        module = _module(torch, layer).cuda().eval()
        with torch.no_grad():
            ref = module(x.float())
        model = module.to(dtype=dtype, memory_format=torch.channels_last)
        row = {"layer": layer, "variant": variant, "graphs": graphs, "ms": None, "ms_pipelined": None,
               "peak_mb": None, "max_abs_diff": None}
        try:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base_alloc, base_used = torch.cuda.memory_allocated(), device_used_mb(torch)
            if variant in OURS:
                key = (layer, variant)
                if key not in packages:
                    path = os.path.join(tmp, f"conv_{layer}_{variant}.pt2")
                    t0 = time.time()
                    aotirt.compile(model, (x,), path, options=aotirt.CompileOptions(**OURS[variant]))
                    print(f"compiled {path} in {time.time() - t0:.0f} s", flush=True)
                    packages[key] = path
                runner = aotirt.load(packages[key])
                call = aotirt.capture(runner, x, alias_inputs=True) if graphs else (lambda: runner(x))
                target = call if not graphs else (lambda: call(x))
            elif variant == "torch_compile":
                compiled = torch.compile(model, mode="max-autotune")
                target = lambda: compiled(x)
            else:
                target = torch_graph(torch, lambda: model(x)) if graphs else (lambda: model(x))
            timed_row(torch, row, target, ref, args.iters,
                      f"{layer} {variant}{' graph' if graphs else ''}" if args.profile else None)
            row["peak_mb"] = (device_used_mb(torch) - base_used if variant in OURS else
                              (torch.cuda.max_memory_allocated() - base_alloc) / 2**20)
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
              "command": " ".join(sys.argv), "batch": args.batch, "dtype": args.dtype, "rows": rows,
              "summary": summarize(rows)}
    return write_result(args.out, "conv.json", result, markdown(rows))


if __name__ == "__main__":
    sys.exit(main())
