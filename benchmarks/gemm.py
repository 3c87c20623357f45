"""GEMM shims vs torch (same cuBLAS/cuBLASLt), CUDA-graph timed, on the GPU machine.

Usage: AOTIRT_SHIM_LIB=/path/libaoti_cuda_shims.so python3 benchmarks/gemm.py [--out DIR] [--quick]

For each op (mm, addmm with a bias row, bmm) x dtype (float32, float16, bfloat16) x shape (M in {1, 8, 64, 256,
1024, 4096} with transformer N, K: 30 shapes per op and dtype), both sides are captured into a CUDA graph of REPS
calls and the graph replays are timed with CUDA events (Inductor-style timings of short kernels swing too much
otherwise); REPS is sized so that one replay is about a millisecond of GPU work. Each row is timed in the order
shim, torch, torch, shim and each side's two medians are averaged, so clock ramps and cache state favor neither.
The shims' first call of a problem (the warm-up, outside capture) times cuBLASLt's heuristic candidates and keeps
the fastest (shims/gemm/tune.h; AOTIRT_GEMM_TUNE=0 keeps the heuristic's first, which is torch's algorithm). For the
rows where the shim is more than 3% slower, the kernels each side launches are recorded (torch.profiler).
Host time per repeated call: the C++ benchmark gemm_host_bench (AOTIRT_GEMM_HOST_BENCH, built by
tools/gpu/bundle.sh) calls the shim (repeated arguments are replayed from a one-call CUDA graph, shims/gemm/replay.h;
also timed with that off) and the same cublasLtMatmul directly; without it, through ctypes
minus a ctypes call of the same signature into a no-op. torch.addmm(out=...) under no_grad is timed through its
Python binding (an upper bound of its C++ host time). Writes DIR/gemm.json (default benchmarks/results; a path ending in .json is taken as the file):
rows (op, dtype, M, N, K, batch, shim_us, torch_us) and a summary (median_ratio, worst_ratio, host_us_per_call,
torch_host_us_per_call, ...); prints a markdown table and the summary. A full run takes about a minute on an H200.
Targets: median ratio <= 1.00, worst <= 1.10, host <= 3 us per call.
"""
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # cliflags.py beside this file
from cliflags import Flags  # noqa: E402  (absl flags, as the aotirt CLI)

M_VALUES = [1, 8, 64, 256, 1024, 4096]
NK = [(768, 768), (3072, 768), (768, 3072), (4096, 4096), (14336, 4096)]  # (N, K): BERT-base and Llama-8B layers
BMM_BATCH = 8
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
CODES = {torch.float32: 6, torch.float16: 5, torch.bfloat16: 15, torch.int32: 3}


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
    """Shim and torch host time per repeated addmm call (bf16, M=8, N=K=768), in us, without synchronizing.

    Returns (shim_us, shim_us_incl_ctypes, torch_us): shim_us subtracts a ctypes call of the same signature (four
    handles, two doubles, the same Python lambda and check) into a function that does nothing, so it is the shim's
    own C++ time; torch_us is torch.addmm(bias, a, b, out=out) under no_grad, Python binding and dispatcher included.
    """
    t = make("addmm", torch.bfloat16, 8, 768, 768)
    fn, hs = shim_fn(shims, "addmm", t)
    H = ctypes.c_void_p
    # aoti_torch_grad_mode_is_enabled() returns false and reads no arguments (extra register arguments are ignored
    # under the SysV ABI): the same ctypes conversions as the shim call, none of its work.
    proto = ctypes.CFUNCTYPE(ctypes.c_bool, H, H, H, H, ctypes.c_double, ctypes.c_double)
    nop6 = proto(ctypes.cast(shims.L.aoti_torch_grad_mode_is_enabled, ctypes.c_void_p).value)
    nop = lambda: shims.check(nop6(hs["out"], hs["bias"], hs["a"], hs["b"], 1.0, 1.0))
    tfn = torch_fn("addmm", t)

    def per_call(f, chunk=200):
        # Chunks of `chunk` calls from an idle GPU, synchronized between chunks (untimed): the launch queue never
        # fills, so the time is the host's enqueue cost, not the GPU's throughput on back-to-back small kernels.
        for _ in range(chunk):
            f()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(3):  # best of 3: host timings only get slower from interference
            total = 0.0
            for _ in range(max(1, n // (3 * chunk))):
                t0 = time.perf_counter()
                for _ in range(chunk):
                    f()
                total += time.perf_counter() - t0
                torch.cuda.synchronize()
            best = min(best, total / (max(1, n // (3 * chunk)) * chunk) * 1e6)
        return best

    with torch.no_grad():
        shim = per_call(fn)
        base = per_call(nop)
        torch_us = per_call(tfn)
    return max(0.0, shim - base), shim, torch_us


def cc_host_bench():
    """The C++ host benchmark's JSON (shim vs a direct cublasLtMatmul per call), or None where it is not built."""
    exe = os.environ.get("AOTIRT_GEMM_HOST_BENCH", "")
    if not exe or not os.access(exe, os.X_OK):
        return None
    try:
        p = subprocess.run([exe], capture_output=True, text=True, timeout=120)
        return json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {"error": p.stderr[-500:]}
    except (subprocess.SubprocessError, ValueError, IndexError) as e:
        return {"error": str(e)}


def kernels_of_slow_rows(shims, stream, rows, threshold=1.03, limit=6):
    """For the rows where the shim is more than `threshold` x torch: the CUDA kernels each side launches."""
    slow = sorted((r for r in rows if r["shim_us"] > threshold * r["torch_us"]),
                  key=lambda r: -r["shim_us"] / r["torch_us"])[:limit]
    found = []
    for r in slow:
        t = make(r["op"], DTYPES[r["dtype"]], r["M"], r["N"], r["K"])
        sfn, hs = shim_fn(shims, r["op"], t)
        tfn = torch_fn(r["op"], t)
        names = {}
        for side, fn in (("shim", sfn), ("torch", tfn)):
            with torch.cuda.stream(stream):
                fn()
                torch.cuda.synchronize()
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    fn()
                    torch.cuda.synchronize()
            names[side] = sorted({e.name[:120] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
        for h in hs.values():
            shims.L.aoti_torch_delete_tensor_object(h)
        found.append(dict(row=f"{r['op']} {r['dtype']} M={r['M']} N={r['N']} K={r['K']}",
                          ratio=round(r["shim_us"] / r["torch_us"], 3), **names))
    return found


def loaded_cublaslt():
    """The cuBLASLt libraries mapped in this process (torch's and the shims'): "same cuBLAS" only if they agree."""
    try:
        with open("/proc/self/maps") as f:
            return sorted({line.split()[-1] for line in f if "libcublasLt" in line})
    except OSError:
        return []


def reps_for(fn, stream, target_ms=1.0):
    """Calls per graph so that one replay is about target_ms of GPU work (2..50), from a few timed eager calls."""
    with torch.cuda.stream(stream):
        fn()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(3):
            fn()
        e.record()
    e.synchronize()
    per_call_ms = max(s.elapsed_time(e) / 3, 1e-3)
    return max(2, min(50, int(target_ms / per_call_ms)))


def parse_args(argv: list | None = None):
    """absl flags (benchmarks/cliflags.py): same names and defaults as the argparse ones they replace."""
    f = Flags("benchmarks/gemm.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
             "folder for gemm.json (a path ending in .json: that file)")
    f.string("lib", os.environ.get("AOTIRT_SHIM_LIB", ""), "libaoti_cuda_shims.so (default: $AOTIRT_SHIM_LIB)")
    f.boolean("quick", False, "fewer shapes (smoke run)")
    return f.parse(argv)


def main(argv: list | None = None):
    args = parse_args(argv)
    if not args.lib:
        sys.exit("set AOTIRT_SHIM_LIB (or --lib) to libaoti_cuda_shims.so")
    if not torch.cuda.is_available():
        sys.exit("no CUDA device")
    out_path = args.out if args.out.endswith(".json") else os.path.join(args.out, "gemm.json")
    torch.backends.cuda.matmul.allow_tf32 = False  # the shims compute fp32 in full IEEE precision by default
    start = time.perf_counter()
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
                    tfn = torch_fn(op, t)
                    sfn, _handles = shim_fn(shims, op, t)
                    reps = reps_for(tfn, stream)
                    shim_a = graph_time_us(sfn, stream, reps)
                    torch_a = graph_time_us(tfn, stream, reps)
                    torch_b = graph_time_us(tfn, stream, reps)
                    shim_b = graph_time_us(sfn, stream, reps)
                    shim_us, torch_us = (shim_a + shim_b) / 2, (torch_a + torch_b) / 2
                    rows.append(dict(op=op, dtype=dname, M=M, N=N, K=K, batch=BMM_BATCH if op == "bmm" else 1,
                                     shim_us=round(shim_us, 3), torch_us=round(torch_us, 3)))
                    print(f"{op:6s} {dname:9s} M={M:5d} N={N:6d} K={K:5d}  shim {shim_us:9.2f} us  "
                          f"torch {torch_us:9.2f} us  ratio {shim_us / torch_us:5.3f}", flush=True)
                    for h in _handles.values():
                        shims.L.aoti_torch_delete_tensor_object(h)
                    del t
    host_us, host_with_ctypes, torch_host_us = host_us_per_call(shims)
    cc_host = cc_host_bench()
    try:
        slow_kernels = kernels_of_slow_rows(shims, stream, rows)
    except Exception as e:  # the profiler is a diagnosis, not the benchmark
        slow_kernels = [dict(row="profiler failed", ratio=0, shim=[repr(e)[:200]], torch=[])]
    ratios = [r["shim_us"] / r["torch_us"] for r in rows]
    by_op = {op: round(statistics.median([r["shim_us"] / r["torch_us"] for r in rows if r["op"] == op]), 4)
             for op in sorted({r["op"] for r in rows})}
    cc_first = (cc_host or {}).get("rows", [{}])[0]
    summary = dict(median_ratio=round(statistics.median(ratios), 4), worst_ratio=round(max(ratios), 4),
                   median_ratio_by_op=by_op,
                   rows_faster=sum(1 for r in ratios if r < 0.99), rows_slower=sum(1 for r in ratios if r > 1.01),
                   host_us_per_call=round(cc_first.get("shim_us", host_us), 3),
                   host_method="C++ gemm_host_bench" if cc_first else "ctypes minus a no-op ctypes call",
                   host_us_per_call_ctypes_method=round(host_us, 3),
                   host_us_per_call_incl_ctypes=round(host_with_ctypes, 3),
                   host_us_per_call_without_graph_replay=cc_first.get("shim_without_graph_replay_us"),
                   host_cublaslt_floor_us=cc_first.get("cublaslt_us"), host_cc_bench=cc_host,
                   slow_rows_kernels=slow_kernels,
                   torch_host_us_per_call=round(torch_host_us, 3),
                   host_problem="addmm bf16 M=8 N=768 K=768, bias row",
                   rows=len(rows), device=torch.cuda.get_device_name(), torch=torch.__version__,
                   torch_cuda=torch.version.cuda, cublaslt_loaded=loaded_cublaslt(),
                   wall_s=round(time.perf_counter() - start, 1), quick=bool(args.quick),
                   targets=dict(median_ratio=1.00, worst_ratio=1.10, host_us_per_call=3.0))
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(dict(rows=rows, summary=summary), f, indent=1)
    shims.L.aoti_torch_delete_cuda_stream_guard(guard)
    print("\n| op | dtype | M | N | K | batch | shim us | torch us | ratio |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['op']} | {r['dtype']} | {r['M']} | {r['N']} | {r['K']} | {r['batch']} | {r['shim_us']} | "
              f"{r['torch_us']} | {r['shim_us'] / r['torch_us']:.3f} |")
    print(f"\n**Summary** ({len(rows)} rows, {summary['device']}, torch {summary['torch']}, "
          f"{summary['wall_s']} s)\n")
    print("| metric | value | target |\n|---|---|---|")
    print(f"| median GPU-time ratio (shim / torch) | {summary['median_ratio']} | <= 1.00 |")
    print(f"| worst GPU-time ratio | {summary['worst_ratio']} | <= 1.10 |")
    for op, v in by_op.items():
        print(f"| median ratio, {op} | {v} | |")
    print(f"| shim host us/call ({summary['host_method']}) | {summary['host_us_per_call']:.2f} | <= 3 |")
    if cc_first:
        print(f"| shim host us/call with AOTIRT_GEMM_GRAPHS=0 (cublasLtMatmul every call) | "
              f"{cc_first['shim_without_graph_replay_us']:.2f} | |")
        print(f"| the same cublasLtMatmul called directly | {cc_first['cublaslt_us']:.2f} | |")
        print(f"| one cudaMemsetAsync enqueue | {cc_first['memset_enqueue_us']:.2f} | |")
    print(f"| shim host us/call (ctypes minus a no-op ctypes call) | {host_us:.2f} | |")
    print(f"| shim host us/call incl. ctypes | {host_with_ctypes:.2f} | |")
    print(f"| torch.addmm(out=) host us/call incl. Python binding | {torch_host_us:.2f} | |")
    print(f"| rows where the shim is >1% faster / >1% slower | {summary['rows_faster']} / {summary['rows_slower']} | |")
    for k in slow_kernels:
        print(f"slow row {k['row']}: shim kernels {k['shim']} | torch kernels {k['torch']}")
    print(f"\ncuBLASLt libraries loaded: {summary['cublaslt_loaded']}")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
