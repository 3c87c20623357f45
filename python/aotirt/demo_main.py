"""The main job on a GPU machine: compile the built-in SigLIP-like demo with AOTInductor (no libtorch in the
package), run it on the aotirt runtime, compare with eager PyTorch and print per-call latency.

  python -m aotirt.demo_main [--blocks 2] [--iters 50] [--out result.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from aotirt.timing import median_ms_per_call


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    import torch

    import aotirt
    from aotirt import demo
    if not torch.cuda.is_available():
        print("no GPU visible to torch: the demo needs one (everything else was built)")
        return 0
    model = demo.siglip_like(num_blocks=a.blocks).to("cuda", torch.bfloat16)
    (x,) = demo.example_inputs(model, dtype=torch.bfloat16)
    path = os.path.join(tempfile.mkdtemp(prefix="aotirt_demo_"), "siglip_like.pt2")
    t0 = time.time()
    aotirt.compile(model, (x,), path)
    compile_s = time.time() - t0
    runner = aotirt.load(path)
    with torch.no_grad():
        want = model(x).float()
        ref32 = model.float()(x.float())
        model.to(torch.bfloat16)
    got = runner(x)
    got = (got[0] if isinstance(got, (list, tuple)) else got).float()
    diff_eager = (got - want).abs().mean().item()
    diff_fp32 = (got - ref32).abs().mean().item()
    eager_diff_fp32 = (want - ref32).abs().mean().item()
    with torch.no_grad():
        ours_ms = median_ms_per_call(torch, lambda: runner(x), a.iters, repeats=1, warmup=5)
        eager_ms = median_ms_per_call(torch, lambda: model(x), a.iters, repeats=1, warmup=5)
    res = {"model": f"siglip_like x{a.blocks} bf16 T=256", "package": path, "compile_s": round(compile_s, 1),
           "mean_abs_diff_vs_eager": diff_eager, "mean_abs_diff_vs_fp32": diff_fp32,
           "eager_mean_abs_diff_vs_fp32": eager_diff_fp32, "aotirt_ms_per_call": ours_ms,
           "eager_ms_per_call": eager_ms, "gpu": torch.cuda.get_device_name()}
    ok = diff_fp32 <= 2 * eager_diff_fp32 + 1e-3
    print(json.dumps(res, indent=1))
    print(f"{'OK' if ok else 'MISMATCH'}: aotirt {ours_ms:.3f} ms/call vs eager {eager_ms:.3f} ms/call; "
          f"mean |diff| vs fp32 reference {diff_fp32:.2e} (eager bf16: {eager_diff_fp32:.2e})")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
