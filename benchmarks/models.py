"""Model-level benchmark: SigLIP-like, Gemma-like and pi0.5-like models on eager, torch.compile and the aotirt runtime
(TRITON, ATEN,TRITON, ATEN, AUTO GEMM backends), each with and without CUDA graphs. Runs on a GPU machine.

    python benchmarks/models.py [--out DIR|FILE.json] [--models siglip,gemma,pi05] [--variants ...] [--quick]
                                [--budget-s 540] [--cache-dir DIR] [--profile]

Writes models.json (rows: model, variant, graphs, ms, mean_abs_diff, ... and the issue's targets), models.md (tables
for benchmarks/RESULTS.md) and models.png (if matplotlib is importable). Progress goes to stderr. Compiled packages
are cached in --cache-dir, and rows merge into an existing --out JSON, so a run cut by --budget-s continues where
it stopped when rerun with the same flags. Flags are absl's (--quick / --noquick, --flag=value or --flag value).
The definitions and the run loop live in the model_bench package beside this script (benchmarks/model_bench; not in
the aotirt wheel; tested on CPU by tests/cpu/test_python_bench_models.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import aotirt  # noqa: F401 (the GPU bundle's copy when tools/gpu/run.sh put it on PYTHONPATH)
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

sys.path.insert(0, HERE)  # model_bench/ and cliflags.py beside this script (also when run from elsewhere)
from model_bench import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(default_out=os.path.join(HERE, "results")))
