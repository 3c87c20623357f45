"""Per-call latency of the demo model on the aotirt runtime vs the same Inductor options under torch.compile.

Runs on a GPU machine (tools/gpu/run.sh bench). Both sides are timed the same way: N back-to-back calls between two
CUDA events (no graphs), median of 5 repeats; then, where capture works, CUDA-graph replays of each. Target:
aotirt <= 1.02 x torch.compile. Writes results/runtime.json (or --out DIR/runtime.json).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # cliflags.py beside this file
from cliflags import Flags  # noqa: E402  (absl flags, as the aotirt CLI)
import provenance  # noqa: E402  (beside this file)


def per_call_ms(fn, torch, iters=100, repeats=5):
    from aotirt.timing import median_ms_per_call
    return median_ms_per_call(torch, fn, iters, repeats, warmup=10)


def graph_ms(fn, torch, iters=100):
    """CUDA-graph replay time per call, or None with the reason when capture fails."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            fn()
        return per_call_ms(g.replay, torch, iters), ""
    except Exception as e:  # noqa: BLE001
        torch.cuda.synchronize()
        return None, f"{type(e).__name__}: {str(e)[:200]}"


def parse_args(argv: list | None = None):
    """absl flags (benchmarks/cliflags.py): same names and defaults as the argparse ones they replace."""
    f = Flags("benchmarks/runtime.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(HERE, "results"), "folder for runtime.json")
    f.integer("blocks", 2, "SigLIP-like blocks of the demo model")
    a = f.parse(argv)
    if a.blocks < 1:
        f.error("--blocks must be >= 1")
    return a


def main(argv=None):
    a = parse_args(argv)
    import torch

    import aotirt
    from aotirt import demo, specs
    model = demo.siglip_like(num_blocks=a.blocks).to("cuda", torch.bfloat16)
    (x,) = demo.example_inputs(model, dtype=torch.bfloat16)
    # the options of the recorded runs (Triton GEMMs, MATH SDPA on both sides), not today's platform defaults
    copts = specs.CompileOptions(max_autotune_gemm_backends="TRITON", max_autotune_conv_backends="TRITON",
                                 attention_backend="MATH")
    opts = specs.inductor_options(copts)
    path = os.path.join(tempfile.mkdtemp(prefix="aotirt_bench_"), "demo.pt2")
    aotirt.compile(model, (x,), path, options=copts)
    runner = aotirt.load(path)
    tc_opts = {k: v for k, v in opts.items() if not k.startswith("aot_inductor.")}
    with torch.no_grad(), torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
        compiled = torch.compile(model, options=tc_opts, fullgraph=True)
        compiled(x)
        rows = {}
        rows["aotirt_ms"] = per_call_ms(lambda: runner(x), torch)
        rows["torch_compile_ms"] = per_call_ms(lambda: compiled(x), torch)
        rows["eager_ms"] = per_call_ms(lambda: model(x), torch)
        try:  # our own whole-model graphs (aotirt.capture), replayed with the input copied in each call
            graphed = aotirt.capture(runner, x)
            rows["aotirt_graph_ms"], rows["aotirt_graph_note"] = per_call_ms(lambda: graphed(x), torch), \
                "aotirt.capture (input copy + replay per call)"
        except Exception as e:  # noqa: BLE001
            rows["aotirt_graph_ms"], rows["aotirt_graph_note"] = None, f"{type(e).__name__}: {str(e)[:200]}"
        rows["torch_compile_graph_ms"], rows["torch_compile_graph_note"] = graph_ms(lambda: compiled(x), torch)
    rows["ratio_aotirt_vs_torch_compile"] = rows["aotirt_ms"] / rows["torch_compile_ms"]
    rows["target"] = "aotirt <= 1.02 x torch.compile (no graphs)"
    rows["met"] = rows["ratio_aotirt_vs_torch_compile"] <= 1.02
    commit = provenance.commit()
    res = {"model": f"siglip_like x{a.blocks} bf16 T=256 batch 1", "gpu": torch.cuda.get_device_name(),
           "torch": torch.__version__, "commit": commit, "inductor_options": {k: str(v) for k, v in opts.items()},
           **rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "runtime.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
