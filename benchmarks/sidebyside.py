"""What the one-op side-by-side benchmarks (attention.py, conv.py) share: how a row is timed on the GPU, the device
memory in use, a kernel profile, picking a subset from a flag, and the best-of-ours against best-peer summary.
Timing goes through aotirt.timing (CUDA events), the one place for how a call is timed."""
from __future__ import annotations

import json
import os
import statistics


def subset(text_items: tuple, valid: tuple, what: str) -> tuple:
    """The flag's items, each one of `valid`, else ValueError naming the bad ones and the valid ones."""
    bad = [x for x in text_items if x not in valid]
    if bad or not text_items:
        raise ValueError(f"unknown {what}(s) {bad or '(none)'}; valid: {', '.join(valid)}")
    return text_items


def time_isolated(torch, call, iters: int) -> float:
    """Median ms of `iters` single calls, each between two events with the GPU idle before it (the host's time to
    the first kernel counts)."""
    from aotirt.timing import events_ms
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    return statistics.median(events_ms(torch, call, 1) for _ in range(iters))


def time_pipelined(torch, call, n: int = 20, repeats: int = 5) -> float:
    """ms per call of `n` back-to-back calls between two events (median of `repeats`): the GPU's throughput, the host's
    per-call time hidden behind its queue unless the host is the slower side; time_isolated and this differ by what the
    host costs per call."""
    from aotirt.timing import median_ms_per_call
    return median_ms_per_call(torch, call, iters=n, repeats=repeats, warmup=1)


def device_used_mb(torch) -> float:
    """The device's used memory (all allocators: ours is not torch's caching allocator)."""
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


def profile_kernels(torch, call, label: str) -> None:
    """Prints what 5 calls of `call` cost (a diagnostic beside the timing, not a measurement): the GPU kernels and
    copies by GPU time, then the host side by self CPU time (CUDA runtime calls such as cudaGraphLaunch,
    cudaStreamWaitEvent, cudaMallocAsync, and torch's own ops), which tells a slow kernel from a slow host path."""
    from torch.profiler import ProfilerActivity, profile
    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            call()
        torch.cuda.synchronize()
    avg = prof.key_averages()
    print(f"profile {label} (GPU):\n" + avg.table(sort_by="cuda_time_total", row_limit=10), flush=True)
    print(f"profile {label} (host):\n" + avg.table(sort_by="self_cpu_time_total", row_limit=14), flush=True)


def best_against_peers(sel: list) -> dict | None:
    """Over rows of one problem with graphs: ours' best (variant ours_*) against the fastest peer, by `ms`, and by
    `ms_pipelined` where rows have it. None when either side has no timed row."""
    ours = [r for r in sel if r["variant"].startswith("ours_") and r.get("ms") is not None]
    peers = [r for r in sel if not r["variant"].startswith("ours_") and r.get("ms") is not None]
    if not ours or not peers:
        return None
    best, peer = min(ours, key=lambda r: r["ms"]), min(peers, key=lambda r: r["ms"])
    entry = {"ours_best": best["variant"], "ours_ms": best["ms"], "peer_best": peer["variant"],
             "peer_ms": peer["ms"], "ratio": best["ms"] / peer["ms"]}
    p_ours = [r for r in ours if r.get("ms_pipelined") is not None]
    p_peers = [r for r in peers if r.get("ms_pipelined") is not None]
    if p_ours and p_peers:  # GPU throughput: host time hidden behind the GPU's queue
        pb, pp = min(p_ours, key=lambda r: r["ms_pipelined"]), min(p_peers, key=lambda r: r["ms_pipelined"])
        entry["pipelined_ratio"] = pb["ms_pipelined"] / pp["ms_pipelined"]
    return entry


def cell(r: dict, key: str, fmt: str) -> str:
    """A table cell: the row's value formatted, '-' when missing."""
    v = r.get(key)
    return "-" if v is None else format(v, fmt)


def timed_row(torch, row: dict, target, ref, iters: int, profile_label: str | None = None) -> None:
    """Fills row's max_abs_diff (from the first call's output, before later calls reuse it: cudagraph trees and
    captured graphs overwrite their outputs), ms (time_isolated), ms_pipelined; prints the kernels when asked."""
    with torch.no_grad():
        out = target()
        out = out[0] if isinstance(out, (list, tuple)) else out
        row["max_abs_diff"] = (out.float() - ref).abs().max().item()
        row["ms"] = time_isolated(torch, target, iters)
        row["ms_pipelined"] = time_pipelined(torch, target)
        if profile_label is not None:
            profile_kernels(torch, target, profile_label)


def torch_graph(torch, fn):
    """fn captured into a torch.cuda.CUDAGraph after one warm-up call: a callable that replays it and returns the
    captured output."""
    with torch.no_grad():
        fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = fn()
    return lambda: (graph.replay(), static_out)[1]


def write_result(out_arg: str, default_name: str, result: dict, table: str) -> int:
    """Writes result as JSON to out_arg (a .json path, or a folder that gets default_name), prints the table and the
    summary; 0 when no row has an error."""
    out = out_arg if out_arg.endswith(".json") else os.path.join(out_arg, default_name)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(table)
    print(json.dumps(result["summary"], indent=1))
    return 0 if all(r.get("error") is None for r in result["rows"]) else 1
