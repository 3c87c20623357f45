"""Host cost of replaying a CUDA graph, by what the graph holds besides kernels.

Usage: python3 benchmarks/graph_launch.py [--out DIR] [--kernels 365] [--allocs 0,48,130] [--memsets 0,48]
                                         [--memcpys 0,48] [--user-objects 0]

Why: a captured decode step of our runtime is one cudaGraphLaunch, yet at 24 layers the host spent ~1.06 ms per
step queueing it (benchmarks/RESULTS.md, decode run 3) where torch.compile's CUDA graph took 0.40 ms. Our graphs
hold, besides their kernels, the memory nodes of every stream-ordered allocation made while capturing (the shims
allocate with cudaMallocAsync; the graph is instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch) and the
memset nodes of cudaMemsetAsync; torch's graphs allocate from a private pool outside the graph and hold kernels only.
This measures the host time of one replay of a graph of KERNELS small kernels (torch's add_ on a 256-element
tensor) with ALLOCS cudaMallocAsync/cudaFreeAsync pairs, MEMSETS cudaMemsetAsync calls and MEMCPYS device-to-device
cudaMemcpyAsync calls (what `aoti_torch_copy_` does for a dense copy) spread among them,
captured with torch.cuda.graph (relaxed mode, so the runtime calls through ctypes are allowed), and USER_OBJECTS
CUDA user objects retained by the graph being captured (what cudnn-frontend >= 1.2x attaches to every graph captured
from its execute by default; session 29 saw our cuDNN graphs wait for their previous launch). Each row: the
host microseconds of graph.replay() (median of 5 rounds of 50 replays, a synchronize between rounds so the launch
queue never fills) and the GPU microseconds per replay (CUDA events). Writes DIR/graph_launch.json.
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


USER_OBJECT_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_destroyed = []
_on_destroy = USER_OBJECT_DESTROY(lambda ptr: _destroyed.append(ptr))  # kept alive: CUDA calls it at graph teardown


def retain_user_objects(rt: ctypes.CDLL, stream: ctypes.c_void_p, n: int) -> None:
    """n user objects (no payload) moved into the graph `stream` is capturing, as cudnn-frontend's
    CudaGraphRetainedResource does (cudaUserObjectNoDestructorSync; the graph takes the one reference)."""
    status, cid, graph = ctypes.c_int(0), ctypes.c_ulonglong(0), ctypes.c_void_p()
    assert rt.cudaStreamGetCaptureInfo(stream, ctypes.byref(status), ctypes.byref(cid), ctypes.byref(graph),
                                       None, None, None) == 0
    assert status.value == 1 and graph.value, "the stream is not capturing"  # 1: cudaStreamCaptureStatusActive
    for _ in range(n):
        obj = ctypes.c_void_p()
        assert rt.cudaUserObjectCreate(ctypes.byref(obj), None, _on_destroy, 1, 1) == 0  # 1: NoDestructorSync
        assert rt.cudaGraphRetainUserObject(graph, obj, 1, 1) == 0  # 1: cudaGraphUserObjectMove


def cudart() -> ctypes.CDLL:
    """The CUDA runtime torch loaded (its soname), for cudaMallocAsync/cudaFreeAsync/cudaMemsetAsync."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cudaMallocAsync.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p]
        lib.cudaFreeAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
        lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                        ctypes.c_void_p]
        # CUDA 13's cudaStreamGetCaptureInfo: (stream, status*, id*, graph*, deps**, edge data**, count*)
        lib.cudaStreamGetCaptureInfo.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                                 ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_void_p),
                                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        lib.cudaUserObjectCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, USER_OBJECT_DESTROY,
                                             ctypes.c_uint, ctypes.c_uint]
        lib.cudaGraphRetainUserObject.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        return lib
    raise RuntimeError("no libcudart found")


def build(kernels: int, allocs: int, memsets: int, rt: ctypes.CDLL, memcpys: int = 0, user_objects: int = 0) -> tuple:
    """A captured graph of `kernels` add_ kernels with `allocs` malloc/free pairs, `memsets` memsets and `memcpys`
    device-to-device copies among them, holding `user_objects` CUDA user objects."""
    x = torch.zeros(256, device="cuda")
    scratch = torch.zeros(max(memsets, memcpys, 1), 16, dtype=torch.int64, device="cuda")
    src = torch.ones(16, dtype=torch.int64, device="cuda")
    g = torch.cuda.CUDAGraph()
    every_a = max(1, kernels // max(allocs, 1))
    every_m = max(1, kernels // max(memsets, 1))
    every_c = max(1, kernels // max(memcpys, 1))

    def body(capturing: bool = False):
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        if capturing and user_objects:
            retain_user_objects(rt, stream, user_objects)
        live, done_a, done_m, done_c = [], 0, 0, 0
        for i in range(kernels):
            x.add_(1.0)
            if done_a < allocs and i % every_a == 0:
                p = ctypes.c_void_p()
                assert rt.cudaMallocAsync(ctypes.byref(p), 4096, stream) == 0
                live.append(p)
                done_a += 1
                if len(live) > 2:  # freed a little later in stream order, as a wrapper frees its buffers
                    assert rt.cudaFreeAsync(live.pop(0), stream) == 0
            if done_m < memsets and i % every_m == 0:
                assert rt.cudaMemsetAsync(ctypes.c_void_p(scratch[done_m].data_ptr()), 0, 128, stream) == 0
                done_m += 1
            if done_c < memcpys and i % every_c == 0:
                assert rt.cudaMemcpyAsync(ctypes.c_void_p(scratch[done_c].data_ptr()), ctypes.c_void_p(src.data_ptr()),
                                          128, 3, stream) == 0  # 3: cudaMemcpyDeviceToDevice
                done_c += 1
        for p in live:
            assert rt.cudaFreeAsync(p, stream) == 0

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body()  # warm-up outside capture
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g, capture_error_mode="relaxed"):
        body(capturing=True)
    torch.cuda.synchronize()
    return g, x, scratch, src


def time_replays(g: torch.cuda.CUDAGraph, rounds: int = 5, per_round: int = 50) -> tuple:
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    host, gpu = [], []
    for _ in range(rounds):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        t0 = time.perf_counter()
        for _ in range(per_round):
            g.replay()
        host.append((time.perf_counter() - t0) * 1e6 / per_round)
        e1.record()
        e1.synchronize()
        gpu.append(e0.elapsed_time(e1) * 1e3 / per_round)
    return statistics.median(host), statistics.median(gpu)


def counts(text: str, flag: str) -> list:
    """'0,48,130' -> [0, 48, 130]; a negative or non-integer count is a usage error (ValueError)."""
    out = []
    for v in text.split(","):
        if not v.strip():
            continue
        n = int(v)
        if n < 0:
            raise ValueError(f"--{flag}: counts must be >= 0, got {n}")
        out.append(n)
    if not out:
        raise ValueError(f"--{flag}: give at least one count")
    return out


def parse_args(argv: list | None = None):
    f = Flags("benchmarks/graph_launch.py", __doc__.split("\n\n")[0])
    f.string("out", "", "folder for graph_launch.json (default: print only)")
    f.integer("kernels", 365, "kernel nodes per graph (a 24-layer decode step of ours: 365)")
    f.define("allocs", [0, 48, 130], "comma-separated counts of cudaMallocAsync/cudaFreeAsync pairs",
             lambda t: counts(t, "allocs"))
    f.define("memsets", [0, 48], "comma-separated counts of cudaMemsetAsync nodes", lambda t: counts(t, "memsets"))
    f.define("memcpys", [0, 48], "comma-separated counts of device-to-device cudaMemcpyAsync nodes",
             lambda t: counts(t, "memcpys"))
    f.define("user-objects", [0], "comma-separated counts of CUDA user objects the graph holds",
             lambda t: counts(t, "user-objects"))
    a = f.parse(argv)
    if a.kernels < 1:
        f.error("--kernels must be >= 1")
    if max(a.allocs + a.memsets + a.memcpys) > a.kernels:
        f.error("--allocs, --memsets and --memcpys may not exceed --kernels (at most one of each after a kernel)")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    rt = cudart()
    rows = []
    combos = [(al, ms, mc, uo) for al in a.allocs for ms in a.memsets for mc in a.memcpys for uo in a.user_objects]
    for allocs, memsets, memcpys, user_objects in combos:
        g, *_keep = build(a.kernels, allocs, memsets, rt, memcpys, user_objects)
        host_us, gpu_us = time_replays(g)
        rows.append({"kernels": a.kernels, "allocs": allocs, "memsets": memsets, "memcpys": memcpys,
                     "user_objects": user_objects, "host_us": round(host_us, 1), "gpu_us": round(gpu_us, 1)})
        print(f"kernels {a.kernels:4d}  allocs {allocs:4d}  memsets {memsets:3d}  memcpys {memcpys:3d}  user objects "
              f"{user_objects:2d}:  host {host_us:8.1f} us/replay,  GPU {gpu_us:8.1f} us/replay", flush=True)
        del g
    result = {"benchmark": "graph_launch", "commit": provenance.commit(), "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "command": [sys.executable, *sys.argv], "rows": rows}
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "graph_launch.json"), "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
