"""CUDA-event timing shared by the main job, the benchmarks and AUTO: one place for how a call is timed."""
from __future__ import annotations

import statistics
from typing import Any, Callable


def events_ms(torch: Any, fn: Callable[[], Any], n: int) -> float:
    """Milliseconds per call over `n` back-to-back calls of fn between two CUDA events on the current stream."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / n


def median_ms_per_call(torch: Any, fn: Callable[[], Any], iters: int = 100, repeats: int = 5,
                       warmup: int = 10) -> float:
    """`warmup` calls, a synchronize, then the median of `repeats` samples of `iters` calls each (events_ms)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return statistics.median(events_ms(torch, fn, iters) for _ in range(repeats))
