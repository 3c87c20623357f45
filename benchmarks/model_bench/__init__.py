"""Model-level benchmark suite (benchmarks/models.py runs it): definitions, variants, run loop, report. Needs torch.

Models (random weights, no downloads; bf16, batch 1 when benchmarked):
  siglip  4 SigLIP-like pre-LN blocks (width 1152, MLP 4304, 16 heads, biases, T=256) + final LayerNorm
          (aotirt.demo.siglip_like).
  gemma   4 Gemma-like decoder blocks (width 1024, gated-GELU MLP 4096, 8 query heads, 1 KV head, head dim 256,
          RMSNorm, RoPE, no biases, T=64, causal) + final RMSNorm.
  pi05    one pi0.5-like policy step: patch embedding + a SigLIP-like vision tower (4 blocks) -> projector -> prefix
          K/V for each layer of a Gemma-like action expert (4 blocks); then a 10-step flow-matching loop (Euler, t from
          1 to 0) over [state token; 50 action tokens], unrolled inside forward, so one package runs the whole step.

Variants: eager; torch_compile (same Inductor options as aotirt.compile minus aot_inductor.*, SDPA math as in
lowering; GEMM backends TRITON like the project default; torch_compile_aten_triton / torch_compile_aten on request);
aotirt_triton, aotirt_aten_triton, aotirt_aten (aotirt.compile with max_autotune and those GEMM backends) and
aotirt_auto and aotirt_auto_eager (aotirt.auto.compile_auto over the three, reusing their cached packages, timing
them with and without CUDA graphs: auto_timing="graphs" / "eager"). Each with and without CUDA
graphs (ours: aotirt.capture; eager/torch.compile: torch.cuda.graph), input copy into the static buffers included in
the graph timing of both. Timing: CUDA events around back-to-back calls, median of repeats. Accuracy: mean |diff| of
the output vs the same model in float32 (TF32 off).

The run loop takes a backend object (cuda.CudaBench) so that its bookkeeping - errors recorded per row, the time
budget, incremental JSON, merging with an earlier run, targets, tables - is testable on CPU.

Modules: models (definitions, configs, inputs), variants (names and their GEMM backends), cuda (the real backend:
compile cache, CUDA graphs, timing), run (the run loop and its JSON), report (targets, Markdown, plot), cli (flags,
main). It lives beside the scripts, not in the aotirt package: the wheel ships no benchmark code.
"""
