"""GEMM shims vs torch (same cuBLAS/cuBLASLt), CUDA-graph timed, on the GPU machine.

Usage: AOTIRT_SHIM_LIB=/path/libaoti_cuda_shims.so python3 benchmarks/gemm.py [--out benchmarks/results/gemm.json]

For each op (mm, addmm with a bias row, bmm) x dtype (float32, float16, bfloat16) x shape (M in {1, 8, 64, 256,
1024, 4096} with transformer N, K), both sides are captured into a CUDA graph of REPS calls and the graph replays are
timed with CUDA events (Inductor-style timings of short kernels swing too much otherwise). Host time per repeated
shim call is measured on a small addmm without synchronizing. Writes JSON rows (op, dtype, M, N, K, batch, shim_us,
torch_us) and a summary (median_ratio, worst_ratio, host_us_per_call), and prints a markdown table.
Targets: median ratio <= 1.00, worst <= 1.10, host <= 3 us per call.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import torch

M_VALUES = [1, 8, 64, 256, 1024, 4096]
NK = [(768, 768), (3072, 768), (768, 3072), (4096, 4096), (14336, 4096)]  # (N, K): BERT-base and Llama-8B layers
BMM_BATCH = 8
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
CODES = {torch.float32: 6, torch.float16: 5, torch.bfloat16: 15}


class Shims:
    def __init__(self, path):
        L = ctypes.CDLL(path)
        H, I64P = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
        L.aoti_torch_create_tensor_from_blob.argtypes = [ctypes.c_void_p, ctypes.c_int64, I64P, I64P, ctypes.c_int64,
                                                         ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                                         ctypes.POINTER(H)]
        L.aoti_torch_delete_tensor_object.argtypes = [H]
        L.aotirt_last_error.restype = ctypes.c_char_p
        L.aoti_torch_cuda_mm_out.argtypes = [H, H, H]
        L.aoti_torch_cuda_bmm_out.argtypes = [H, H, H]
        L.aoti_torch_cuda_addmm_out.argtypes = [H, H, H, H, ctypes.c_double, ctypes.c_double]
        L.aoti_torch_create_cuda_stream_guard.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(H)]
        L.aoti_torch_delete_cuda_stream_guard.argtypes = [H]
        self.L = L

    def wrap(self, t):
        n = t.dim()
        h = ctypes.c_void_p()
        rc = self.L.aoti_torch_create_tensor_from_blob(t.data_ptr(), n, (ctypes.c_int64 * n)(*t.shape),
                                                       (ctypes.c_int64 * n)(*t.stride()), 0, CODES[t.dtype], 1,
                                                       t.device.index or 0, ctypes.byref(h))
        if rc:
            raise RuntimeError(self.L.aotirt_last_error().decode())
        return h

    def check(self, rc):
        if rc:
            raise RuntimeError(self.L.aotirt_last_error().decode())

    def stream_guard(self, stream):
        g = ctypes.c_void_p()
        self.check(self.L.aoti_torch_create_cuda_stream_guard(stream.cuda_stream, stream.device.index or 0,
                                                               ctypes.byref(g)))
        return g


def make(op, dtype, M, N, K):
    dev = "cuda"
    if op == "bmm":
        a = torch.randn(BMM_BATCH, M, K, device=dev, dtype=dtype)
        b = torch.randn(BMM_BATCH, K, N, device=dev, dtype=dtype)
        return dict(a=a, b=b, out=torch.empty(BMM_BATCH, M, N, device=dev, dtype=dtype), bias=None)
    a = torch.randn(M, K, device=dev, dtype=dtype)
    w = torch.randn(N, K, device=dev, dtype=dtype)  # nn.Linear weight: mat2 is its transposed view
    bias = torch.randn(N, device=dev, dtype=dtype) if op == "addmm" else None
    return dict(a=a, b=w.t(), out=torch.empty(M, N, device=dev, dtype=dtype), bias=bias)


def shim_fn(shims, op, t):
    hs = dict(a=shims.wrap(t["a"]), b=shims.wrap(t["b"]), out=shims.wrap(t["out"]))
    if op == "addmm":
        hs["bias"] = shims.wrap(t["bias"])
        fn = lambda: shims.check(shims.L.aoti_torch_cuda_addmm_out(hs["out"], hs["bias"], hs["a"], hs["b"], 1.0, 1.0))
    elif op == "bmm":
        fn = lambda: shims.check(shims.L.aoti_torch_cuda_bmm_out(hs["out"], hs["a"], hs["b"]))
    else:
        fn = lambda: shims.check(shims.L.aoti_torch_cuda_mm_out(hs["out"], hs["a"], hs["b"]))
    return fn, hs


def torch_fn(op, t):
    if op == "addmm":
        return lambda: torch.addmm(t["bias"], t["a"], t["b"], out=t["out"])
    if op == "bmm":
        return lambda: torch.bmm(t["a"], t["b"], out=t["out"])
    return lambda: torch.mm(t["a"], t["b"], out=t["out"])


def graph_time_us(fn, stream, reps, replays=5):
    """Captures `reps` calls of fn on `stream` into a graph; returns the median replay time per call in us."""
    with torch.cuda.stream(stream):
        fn()  # warm-up outside capture (handles, plans, cuBLAS workspaces)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    with torch.cuda.stream(stream):  # replay() launches on the current stream: time it there
        for _ in range(replays):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1000.0 / reps)
    del g
    return statistics.median(times)


def host_us_per_call(shims, n=20000):
    t = make("addmm", torch.bfloat16, 8, 768, 768)
    fn, _ = shim_fn(shims, "addmm", t)
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    # ctypes adds its own per-call overhead; measured alone below and subtracted so the number is the shim's.
    nop = shims.L.aotirt_clear_last_error
    t2 = time.perf_counter()
    for _ in range(n):
        nop()
    t3 = time.perf_counter()
    return max(0.0, (t1 - t0 - (t3 - t2)) / n * 1e6), (t1 - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "gemm.json"))
    ap.add_argument("--lib", default=os.environ.get("AOTIRT_SHIM_LIB", ""))
    ap.add_argument("--quick", action="store_true", help="fewer shapes (smoke run)")
    args = ap.parse_args()
    if not args.lib:
        sys.exit("set AOTIRT_SHIM_LIB (or --lib) to libaoti_cuda_shims.so")
    if not torch.cuda.is_available():
        sys.exit("no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False  # the shims compute fp32 in full IEEE precision by default
    shims = Shims(args.lib)
    stream = torch.cuda.Stream()
    guard = shims.stream_guard(stream)  # the shims run on the capture stream too
    ms = M_VALUES[:3] if args.quick else M_VALUES
    nks = NK[:2] if args.quick else NK
    rows = []
    for op in ["mm", "addmm", "bmm"]:
        for dname, dtype in DTYPES.items():
            for (N, K) in nks:
                for M in ms:
                    if op == "bmm" and N * K > 4096 * 4096:
                        continue  # batched Llama-MLP sized operands are not a bmm shape; keeps memory modest
                    t = make(op, dtype, M, N, K)
                    flops = 2.0 * M * N * K * (BMM_BATCH if op == "bmm" else 1)
                    reps = max(2, min(50, int(2e11 / max(flops, 1))))
                    sfn, _handles = shim_fn(shims, op, t)
                    shim_us = graph_time_us(sfn, stream, reps)
                    torch_us = graph_time_us(torch_fn(op, t), stream, reps)
                    rows.append(dict(op=op, dtype=dname, M=M, N=N, K=K, batch=BMM_BATCH if op == "bmm" else 1,
                                     shim_us=round(shim_us, 3), torch_us=round(torch_us, 3)))
                    print(f"{op:6s} {dname:9s} M={M:5d} N={N:6d} K={K:5d}  shim {shim_us:9.2f} us  "
                          f"torch {torch_us:9.2f} us  ratio {shim_us / torch_us:5.3f}", flush=True)
                    for h in _handles.values():
                        shims.L.aoti_torch_delete_tensor_object(h)
                    del t
    host_us, host_with_ctypes = host_us_per_call(shims)
    ratios = [r["shim_us"] / r["torch_us"] for r in rows]
    summary = dict(median_ratio=round(statistics.median(ratios), 4), worst_ratio=round(max(ratios), 4),
                   host_us_per_call=round(host_us, 3), host_us_per_call_incl_ctypes=round(host_with_ctypes, 3),
                   rows=len(rows), device=torch.cuda.get_device_name(), torch=torch.__version__,
                   targets=dict(median_ratio=1.00, worst_ratio=1.10, host_us_per_call=3.0))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(rows=rows, summary=summary), f, indent=1)
    shims.L.aoti_torch_delete_cuda_stream_guard(guard)
    print("\n| op | dtype | M | N | K | batch | shim us | torch us | ratio |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['op']} | {r['dtype']} | {r['M']} | {r['N']} | {r['K']} | {r['batch']} | {r['shim_us']} | "
              f"{r['torch_us']} | {r['shim_us'] / r['torch_us']:.3f} |")
    print(f"\nmedian ratio {summary['median_ratio']} (target <= 1.00), worst {summary['worst_ratio']} (<= 1.10), "
          f"host {summary['host_us_per_call']} us/call (<= 3; {host_with_ctypes:.2f} incl. ctypes)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
