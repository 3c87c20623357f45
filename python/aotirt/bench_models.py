"""Compatibility module: the model benchmark now lives in the aotirt.bench package (models, variants, cuda, run,
report, cli). Older callers (`from aotirt import bench_models`) keep working through these re-exports."""
from __future__ import annotations

from aotirt import demo  # noqa: F401  (bench_models.demo.SiglipLike: the SigLIP-like model's module)
from aotirt.bench.cli import main, parse_args
from aotirt.bench.cuda import CudaBench, Handle, ModelCtx, profile_calls, time_ms
from aotirt.bench.models import (FULL, GEMMA, MODELS, PI05, SIGLIP, TINY, GemmaAttention, GemmaBlock, GemmaLike,
                                 Pi05Like, RMSNorm, apply_rope, build, config, example_inputs, output_shape,
                                 rope_tables, timestep_embedding)
from aotirt.bench.report import markdown, plot, targets
from aotirt.bench.run import load_existing, out_paths, run_benchmark, write_json
from aotirt.bench.variants import DEFAULT_VARIANTS, FIXED, TORCH_COMPILE, VARIANTS, gemm_backends

__all__ = [
    "CudaBench", "DEFAULT_VARIANTS", "demo", "FIXED", "FULL", "GEMMA", "GemmaAttention", "GemmaBlock", "GemmaLike",
    "Handle", "MODELS", "ModelCtx", "PI05", "Pi05Like", "RMSNorm", "SIGLIP", "TINY", "TORCH_COMPILE", "VARIANTS",
    "apply_rope",
    "build", "config", "example_inputs", "gemm_backends", "load_existing", "main", "markdown", "out_paths",
    "output_shape", "parse_args", "plot", "profile_calls", "rope_tables", "run_benchmark", "targets", "time_ms",
    "timestep_embedding", "write_json",
]
