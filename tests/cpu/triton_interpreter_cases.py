"""Runs random SDPA cases through the Triton attention kernel (aotirt.triton_attention, fixed configs in rotation)
on CPU tensors under Triton's interpreter, against the float64 reference of tests/util/sdpa_cases.py.

    TRITON_INTERPRET=1 PYTHONPATH=<triton>:<aotirt>:tests/util python triton_interpreter_cases.py SEED COUNT

Prints one line per failing case and a last line "cases N failed F configs C"; exits 1 if any failed. Run by
tests/cpu/test_triton_attention_interpreter.py."""
import os
import random
import sys

import torch

if os.environ.get("TRITON_INTERPRET") != "1":
    sys.exit("set TRITON_INTERPRET=1: these cases run the kernel on CPU tensors under Triton's interpreter")

import sdpa_cases  # noqa: E402
from aotirt import triton_attention as ta  # noqa: E402

TOL = {torch.float16: (4e-3, 4e-3), torch.float32: (2e-5, 2e-5)}  # as the GPU test's, against float64


def main(seed: int, count: int) -> int:
    torch.set_float32_matmul_precision("highest")  # float32: IEEE products, as the GPU test runs them
    rng = random.Random(seed)
    failed, configs = 0, set()
    for i in range(count):
        c = sdpa_cases.random_case(rng, i, small=True)
        q, k, v, mask = sdpa_cases.tensors(c, seed * 1000 + i, device="cpu")
        cands = ta.config_candidates(ta._next_pow2(c["d"]), ta._next_pow2(c["dv"]), q.element_size())
        config = cands[(seed + i) % len(cands)]
        configs.add(config)
        gqa = c["h"] != c["hkv"]
        try:
            got = ta.run(q, k, v, mask, c["causal"], c["scale"], gqa, config=config)
            want = sdpa_cases.reference(q, k, v, mask, c["causal"], c["scale"], gqa)
            atol, rtol = TOL[c["dtype"]]
            torch.testing.assert_close(got.double(), want, atol=atol, rtol=rtol)
            assert got.shape == want.shape and got.dtype == q.dtype and got.is_contiguous()
        except Exception as e:  # noqa: BLE001 (each failing case is reported, the run goes on)
            failed += 1
            print(f"FAILED {c} config {config}: {type(e).__name__}: {str(e)[:400]}", flush=True)
    print(f"cases {count} failed {failed} configs {len(configs)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
