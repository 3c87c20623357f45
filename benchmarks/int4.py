"""Weight-only int4 GEMM: our shim aoti_torch_cuda__weight_int4pack_mm vs torch's own kernel, CUDA-graph timed.

Usage: AOTIRT_SHIM_LIB=/path/libaoti_cuda_shims.so python3 benchmarks/int4.py [--out DIR] [--quick]

Both sides take the same operands: bfloat16 activations [m, k], weights group-quantized and packed by
torch._convert_weight_to_int4pack (inner_k_tiles 8), group size 128 by default, and torch's scales_and_zeros. For each
(n, k) of a Llama-style decoder (the 0.43B model of benchmarks/decode.py and Llama-7B's projections) and each m
(1 = a decode step at batch 1, up to 512 = a prefill), both sides are captured into a CUDA graph of REPS calls (the
shim on the capture stream through its stream guard, its output freed each call as a package's wrapper does) and the
replays are timed with CUDA events, in the order shim, torch, torch, shim (gemm.py's method). Before timing, each
row checks that the shim's output is within bf16 rounding of torch's (a wrong kernel is not timed). Writes
DIR/int4.json (rows: m, n, k, group, shim_us, torch_us, and shim_cuda_cores_us: the shim with AOTIRT_INT4_MMA=0,
i.e. the CUDA-core int4 kernel or, from its own threshold on, dequantize + cuBLASLt, for the rows the default
tensor-core kernel runs (below its dequantize + cuBLASLt threshold); summary: median ratio per m class) and prints a
table. Target: shim <= 1.0x torch's time at m <= 8 (decode), reported for
larger m.
"""
import ctypes
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provenance  # noqa: E402
from cliflags import Flags  # noqa: E402
from gemm import Shims, graph_time_us, reps_for  # noqa: E402  (ctypes wrappers and the graph timing)

M_VALUES = [1, 2, 4, 8, 16, 32, 64, 128, 512]
# (n, k): decode.py's llama_05b (q/o, k/v, gate/up, down) and Llama-7B (q/k/v/o, gate/up, down)
NK = [(1024, 1024), (256, 1024), (4096, 1024), (1024, 4096), (4096, 4096), (11008, 4096), (4096, 11008)]
DECODE_M = 8  # rows with m <= this are decode-like: the target applies there
MMA_MAX_M = 32  # rows the tensor-core kernel runs (below shim_int4.cc's kMmaDequantizeMinRows): the other path too
MMA_ENV = "AOTIRT_INT4_MMA"  # "0": the shim without the tensor-core kernel (its default is on)


def quantize(n: int, k: int, group: int, inner_k_tiles: int, seed: int = 0) -> tuple:
    """(packed int32 weights, scales_and_zeros [k/group, n, 2] bf16) on the GPU, from random 4-bit values."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 16, (n, k), generator=g, dtype=torch.int32)
    packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8).cuda(), inner_k_tiles)
    scales = torch.rand(k // group, n, generator=g) * 0.02 + 0.005
    zeros = torch.randn(k // group, n, generator=g) * 0.05
    return packed, torch.stack([scales, zeros], dim=-1).to(torch.bfloat16).contiguous().cuda()


class Int4(Shims):
    def __init__(self, path: str):
        super().__init__(path)
        H = ctypes.c_void_p
        self.L.aoti_torch_cuda__weight_int4pack_mm.argtypes = [H, H, ctypes.c_int64, H, ctypes.POINTER(H)]
        self.L.aoti_torch_copy_.argtypes = [H, H, ctypes.c_int32]

    def fn(self, x, packed, group, sz, out):
        """A call of the shim that copies its result into `out` (torch's tensor) and frees the shim's output."""
        hs = [self.wrap(t) for t in (x, packed, sz)]
        oh = self.wrap(out)

        def call(copy: bool = False):
            r = ctypes.c_void_p()
            self.check(self.L.aoti_torch_cuda__weight_int4pack_mm(hs[0], hs[1], group, hs[2], ctypes.byref(r)))
            if copy:
                self.check(self.L.aoti_torch_copy_(oh, r, 0))
            self.L.aoti_torch_delete_tensor_object(r)
        return call, hs + [oh]


def summarize(rows: list) -> dict:
    """Median and worst shim/torch ratio for decode-like rows (m <= DECODE_M) and the rest, and per m."""
    def stats(rs):
        ratios = [r["shim_us"] / r["torch_us"] for r in rs]
        return {"rows": len(ratios), "median_ratio": round(statistics.median(ratios), 3),
                "worst_ratio": round(max(ratios), 3)} if ratios else {"rows": 0}
    cc = [dict(r, shim_us=r["shim_cuda_cores_us"]) for r in rows if r.get("shim_cuda_cores_us") is not None]
    return {"decode": stats([r for r in rows if r["m"] <= DECODE_M]),
            "larger_m": stats([r for r in rows if r["m"] > DECODE_M]),
            "decode_cuda_cores": stats([r for r in cc if r["m"] <= DECODE_M]),
            "cuda_cores_larger_m": stats([r for r in cc if r["m"] > DECODE_M]),
            "by_m": {str(m): stats([r for r in rows if r["m"] == m]) for m in sorted({r["m"] for r in rows})},
            "target": f"median and worst ratio <= 1.0 for m <= {DECODE_M}"}


def markdown(rows: list, summary: dict) -> str:
    lines = ["| m | n | k | group | shim us | torch us | ratio | without mma us | its ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cc = r.get("shim_cuda_cores_us")
        cc_cols = "— | —" if cc is None else f"{cc:.2f} | {cc / r['torch_us']:.2f}"
        lines.append(f"| {r['m']} | {r['n']} | {r['k']} | {r['group']} | {r['shim_us']:.2f} | {r['torch_us']:.2f} | "
                     f"{r['shim_us'] / r['torch_us']:.2f} | {cc_cols} |")
    lines += ["", "| rows | count | median ratio | worst ratio |", "|---|---|---|---|"]
    for name in ("decode", "larger_m", "decode_cuda_cores", "cuda_cores_larger_m"):
        s = summary[name]
        lines.append(f"| {name} | {s['rows']} | {s.get('median_ratio', '-')} | {s.get('worst_ratio', '-')} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list | None = None):
    f = Flags("benchmarks/int4.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
             "folder for int4.json (a path ending in .json: that file)")
    f.string("lib", os.environ.get("AOTIRT_SHIM_LIB", ""), "libaoti_cuda_shims.so (default: $AOTIRT_SHIM_LIB)")
    f.enum("group", "128", ("32", "64", "128", "256"), "quantization group size")
    f.boolean("quick", False, "fewer shapes (smoke run)")
    return f.parse(argv)


def main(argv: list | None = None) -> int:
    a = parse_args(argv)
    if not a.lib:
        sys.exit("set AOTIRT_SHIM_LIB (or --lib) to libaoti_cuda_shims.so")
    if not torch.cuda.is_available():
        sys.exit("no CUDA device")
    out_path = a.out if a.out.endswith(".json") else os.path.join(a.out, "int4.json")
    group, start = int(a.group), time.perf_counter()
    shims = Int4(a.lib)
    stream = torch.cuda.Stream()
    guard = shims.stream_guard(stream)
    rows, failures = [], []
    for n, k in (NK[:2] if a.quick else NK):
        packed, sz = quantize(n, k, group, 8)
        for m in (M_VALUES[:3] if a.quick else M_VALUES):
            x = (torch.randn(m, k, device="cuda") * 0.5).to(torch.bfloat16)
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            call, hs = shims.fn(x, packed, group, sz, out)
            with torch.cuda.stream(stream):
                call(copy=True)
                ref = torch._weight_int4pack_mm(x, packed, group, sz)
            stream.synchronize()
            err = ((out.float() - ref.float()).abs().max() / (ref.float().abs().max() + 1e-6)).item()
            if err > 2e-2:
                failures.append(f"m={m} n={n} k={k}: shim differs from torch by {err:.3e} of max |out|")
            else:
                tfn = lambda: torch._weight_int4pack_mm(x, packed, group, sz)  # noqa: E731
                reps = reps_for(tfn, stream)
                s_a = graph_time_us(call, stream, reps)
                t_a = graph_time_us(tfn, stream, reps)
                t_b = graph_time_us(tfn, stream, reps)
                s_b = graph_time_us(call, stream, reps)
                r = dict(m=m, n=n, k=k, group=group, shim_us=round((s_a + s_b) / 2, 3),
                         torch_us=round((t_a + t_b) / 2, 3), max_rel_diff=round(err, 5))
                if m <= MMA_MAX_M:  # the shim without the tensor-core kernel, checked and timed the same way
                    prev = os.environ.get(MMA_ENV)  # the caller's setting, if any, is what shim_us timed
                    os.environ[MMA_ENV] = "0"
                    try:
                        with torch.cuda.stream(stream):
                            call(copy=True)
                        stream.synchronize()
                        alt_err = ((out.float() - ref.float()).abs().max() / (ref.float().abs().max() + 1e-6)).item()
                        if alt_err > 2e-2:
                            failures.append(f"m={m} n={n} k={k}: the shim with {MMA_ENV}=0 differs from torch by "
                                            f"{alt_err:.3e} of max |out|")
                        else:
                            r["shim_cuda_cores_us"] = round((graph_time_us(call, stream, reps) +
                                                              graph_time_us(call, stream, reps)) / 2, 3)
                    finally:
                        if prev is None:
                            os.environ.pop(MMA_ENV, None)
                        else:
                            os.environ[MMA_ENV] = prev
                rows.append(r)
                print(f"m={m:4d} n={n:6d} k={k:6d}  shim {r['shim_us']:8.2f} us  torch {r['torch_us']:8.2f} us  "
                      f"ratio {r['shim_us'] / r['torch_us']:.2f}  without mma "
                      f"{r.get('shim_cuda_cores_us') or float('nan'):8.2f} us", flush=True)
            for h in hs:
                shims.L.aoti_torch_delete_tensor_object(h)
    shims.L.aoti_torch_delete_cuda_stream_guard(guard)
    summary = summarize(rows) if rows else {}
    summary.update(failures=failures, device=torch.cuda.get_device_name(), torch=torch.__version__,
                   commit=provenance.commit(), command=[sys.executable, *sys.argv],
                   wall_s=round(time.perf_counter() - start, 1), quick=bool(a.quick))
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(dict(rows=rows, summary=summary), f, indent=1)
    print(markdown(rows, summary) if rows else "no rows")
    for line in failures:
        print("WRONG:", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
