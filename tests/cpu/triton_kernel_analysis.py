"""What Inductor sees of the Triton attention kernel when it embeds it in a package, checked without a GPU (Triton
compiles the kernel to TTIR for a stand-in sm_90 target; nothing runs):
  - its mutation analysis finds O the only tensor written, through the call into _attend_blocks (where that
    analysis fails, Inductor takes every tensor argument as written and copies them back: extra traffic, and
    a mask view written into the caller's mask);
  - the kernel source Inductor embeds includes the functions the kernel calls.

    PYTHONPATH=<triton>:<aotirt> python triton_kernel_analysis.py

Prints "ok" (exit 0) or what differs (exit 1). Run by tests/cpu/test_triton_attention_interpreter.py."""
import sys

import torch
import triton
from triton.backends.compiler import GPUTarget


class _NoGpuDriver:
    """Triton's active driver for TTIR generation on a machine without a GPU: the target only."""

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        return torch.device("cpu")


def main() -> int:
    triton.runtime.driver.set_active(_NoGpuDriver())
    from torch._higher_order_ops.triton_kernel_wrap import identify_accessed_tensors
    from torch._inductor.codegen.wrapper import user_defined_triton_kernel_transitive_closure_source_code

    from aotirt import triton_attention as ta
    _, jit = ta._kernels()
    B, H, L, D = 1, 2, 64, 64
    q = torch.randn(B, H, L, D, dtype=torch.float16)
    o = torch.empty_like(q)
    m = torch.zeros(B, 1, L, L, dtype=torch.bool).expand(B, H, L, L)
    args = [q, q, q, o, m, *q.stride(), *q.stride(), *q.stride(), *o.stride(), *m.stride(), H, 1, L, L, 0.125]
    problems = []
    for mask_kind in (ta.MASK_NONE, ta.MASK_BOOL, ta.MASK_ADD):
        for causal in (False, True):
            kwargs = dict(zip(jit.arg_names, args), D=D, DV=D, BLOCK_D=D, BLOCK_DV=D, MASK_KIND=mask_kind,
                          CAUSAL=causal, IEEE=False, BLOCK_M=64, BLOCK_N=64)
            acc = identify_accessed_tensors(jit, kwargs, {})
            writes = sorted(d.name for d in acc.read_writes.writes)
            if writes != ["O"]:
                problems.append(f"mask kind {mask_kind}, causal {causal}: Inductor sees writes to {writes}")
    src = user_defined_triton_kernel_transitive_closure_source_code(jit)
    for fn in ("def sdpa_fwd(", "def _attend_blocks("):
        if fn not in src:
            problems.append(f"the source Inductor embeds lacks {fn[4:-1]}")
    print("\n".join(problems) or "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
