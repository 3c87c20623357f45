"""aoti_torch_cuda_sort / _sort_stable / _topk (CUB) on torch CUDA tensors: >= 300 random cases each over every dtype
the shims take, 0-d to 4-D, rows of 1 to 2^17 elements, contiguous / permuted / sliced / expanded (0-stride) inputs,
every dim, ascending and descending, with many equal values and, for floats, NaN (both signs), +-inf and +-0.0. The
outputs' sizes and strides must equal torch's CUDA outputs'; values and indices must equal torch's stable CPU sort
exactly (torch's documented order: NaN largest, equal values in input order); they must equal torch's CUDA results
too wherever those equal torch's CPU ones (where they do not, the case is listed); top-k must equal that sort's
first k. End to end: models that argsort,
sort and take a top-k lower onto these shims (no refusal), match eager, and replay under a whole-model graph
(aotirt.capture: the shims allocate stream-ordered and never synchronize). Called
through ctypes on the shim library named by $AOTIRT_SHIM_LIB."""
import ctypes
import os
import random

import pytest

from conftest import SHIM_LIB as LIB_PATH, compiled, requires_gpu, requires_shim_lib, torch
from test_attention_shims import Shims

pytestmark = requires_shim_lib

CASES = int(os.environ.get("AOTIRT_SORT_CASES", "300"))
H, I64, I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]


class SortShims(Shims):
    def __init__(self, path):
        super().__init__(path)
        HP = ctypes.POINTER(H)
        self.lib.aoti_torch_cuda_sort.argtypes = [H, I64, I32, HP, HP]
        self.lib.aoti_torch_cuda_sort_stable.argtypes = [H, ctypes.POINTER(I32), I64, I32, HP, HP]
        self.lib.aoti_torch_cuda_topk.argtypes = [H, I64, I64, I32, I32, HP, HP]

    def call(self, op, x, *args):
        hx = self.wrap(x)
        v, i = H(), H()
        try:
            if op == "sort":
                rc = self.lib.aoti_torch_cuda_sort(hx, args[0], int(args[1]), ctypes.byref(v), ctypes.byref(i))
            elif op == "sort_stable":
                stable = I32(1)
                rc = self.lib.aoti_torch_cuda_sort_stable(hx, ctypes.byref(stable), args[0], int(args[1]),
                                                          ctypes.byref(v), ctypes.byref(i))
            else:
                k, dim, largest = args
                rc = self.lib.aoti_torch_cuda_topk(hx, k, dim, int(largest), 1, ctypes.byref(v), ctypes.byref(i))
            if rc != 0:
                return None, self.error()
            values, layout = self.take(v, x.dtype)
            indices, ilayout = self.take(i, torch.int64)
            for h in (v, i):
                self.lib.aoti_torch_delete_tensor_object(h)
            assert layout == ilayout
            return (values, indices, layout), ""
        finally:
            self.lib.aoti_torch_delete_tensor_object(hx)


@pytest.fixture(scope="module")
def shims():
    return SortShims(LIB_PATH)


def specials(dtype):
    return torch.tensor([float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0], dtype=dtype)


def random_tensor(rng, dtype_name):
    dtype = getattr(torch, dtype_name)
    ndim = rng.choice([0, 1, 1, 2, 2, 3, 4])
    if ndim == 1 and rng.random() < 0.3:
        sizes = [rng.choice([1, 33, 4096, 4097, 70000, 1 << 17])]
    else:
        sizes = [rng.choice([0, 1, 2, 3, 5, 8, 17, 64]) if rng.random() < 0.95 else 0 for _ in range(ndim)]
        if ndim and 0 in sizes and rng.random() < 0.7:
            sizes = [max(s, 1) for s in sizes]
    numel = 1
    for s in sizes:
        numel *= s
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype == torch.bool:
        flat = torch.rand(numel, generator=g) < 0.5
    elif dtype.is_floating_point:
        few = rng.random() < 0.5  # many equal values
        flat = (torch.randint(-4, 5, (numel,), generator=g).to(dtype) if few
                else torch.randn(numel, generator=g).to(dtype))
        if numel and rng.random() < 0.5:
            pick = torch.randint(0, numel, (max(1, numel // 8),), generator=g)
            flat[pick] = specials(dtype)[torch.randint(0, 6, (pick.numel(),), generator=g)]
    else:
        info = torch.iinfo(dtype)
        lo, hi = (max(info.min, -1000), min(info.max, 1000)) if rng.random() < 0.7 else (info.min, info.max)
        flat = torch.randint(lo, hi, (numel,), generator=g, dtype=torch.int64).to(dtype)
        if numel:
            flat[0] = info.min
    x = flat.reshape(sizes).cuda()
    how = rng.choice(["contiguous", "permuted", "sliced", "expanded"])
    if how == "permuted" and ndim > 1:
        perm = list(range(ndim))
        rng.shuffle(perm)
        x = x.permute(perm).contiguous().permute([perm.index(i) for i in range(ndim)])
    elif how == "sliced" and ndim > 0 and numel:
        d = rng.randrange(ndim)
        x = torch.cat([x, x], dim=d)[(slice(None),) * d + (slice(None, None, 2),)]
    elif how == "expanded" and ndim > 0 and numel:
        d = rng.randrange(ndim)
        reps = rng.choice([2, 3])
        x = x.narrow(d, 0, 1).expand(*[reps if i == d else s for i, s in enumerate(x.shape)])
    return x


def same(a, b):
    """Equal values (NaN == NaN, any sign) and dtype."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point:
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())


def run_random(shims, op, seed):
    rng = random.Random(seed)
    failures, torch_split, ran = [], [], 0
    for case in range(CASES):
        dtype_name = DTYPES[case % len(DTYPES)]
        if op == "topk" and dtype_name == "bool":
            dtype_name = "int16"
        x = random_tensor(rng, dtype_name)
        n = max(x.dim(), 1)
        dim = rng.randrange(-n, n)
        descending = rng.random() < 0.5
        size = x.shape[dim] if x.dim() else 1
        k = rng.randint(0, size) if op == "topk" else size
        desc = f"case {case}: {dtype_name}{list(x.shape)}/{list(x.stride())} dim={dim} descending={descending} k={k}"
        want_v, want_i = torch.sort(x.cpu(), dim=dim, descending=descending, stable=True)
        if op == "topk":
            cuda_v, cuda_i = torch.topk(x, k, dim=dim, largest=descending)
            want_v, want_i = want_v.narrow(dim, 0, k) if x.dim() else want_v, want_i.narrow(dim, 0, k) if x.dim() \
                else want_i
            got, err = shims.call("topk", x, k, dim, descending)
        else:
            cuda_v, cuda_i = torch.sort(x, dim=dim, descending=descending, stable=True)
            got, err = shims.call(op, x, dim, descending)
        ran += 1
        if got is None:
            failures.append(f"{desc}: refused: {err}")
            continue
        values, indices, layout = got
        if [list(v) for v in layout] != [list(cuda_v.shape), list(cuda_v.stride())]:
            failures.append(f"{desc}: layout {layout}, torch's {list(cuda_v.shape)}/{list(cuda_v.stride())}")
            continue
        if not same(values.cpu(), want_v) or not torch.equal(indices.cpu(), want_i):
            bad = (indices.cpu() != want_i).nonzero()[:3].tolist()
            failures.append(f"{desc}: values/indices differ from torch's stable sort (first index mismatches {bad})")
        elif not same(cuda_v.cpu(), want_v):
            torch_split.append(desc)  # torch's CUDA result is not its CPU one: nothing to compare ours with
        elif not same(values, cuda_v):
            failures.append(f"{desc}: values differ from torch's CUDA {op}")
    # Where torch's CUDA kernels disagree with torch's CPU sort, the CPU sort (the documented order) is the reference.
    # Seen on the H200 (b6d925e): float16 rows of 8 and 17 holding a NaN (torch's CUDA sort put the NaN elsewhere),
    # and topk(k=0) of a 0-d tensor (torch's CUDA topk returns without writing its one-element output).
    print(f"{op}: {ran} cases, torch's CUDA result differs from its CPU sort in {len(torch_split)}: "
          + "; ".join(torch_split[:5]))
    assert ran >= CASES
    assert not failures, f"{len(failures)} of {ran} cases failed:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("op", ["sort", "sort_stable", "topk"])
def test_random_cases_match_torch(shims, op):
    run_random(shims, op, {"sort": 1, "sort_stable": 2, "topk": 3}[op])



def test_refusals_keep_the_process_alive(shims):
    x = torch.randn(3, 4, device="cuda")
    got, err = shims.call("topk", x, 5, 1, True)
    assert got is None and "selected index k out of range (k = 5, size(1) = 4)" in err, err
    got, err = shims.call("sort", x, 2, False)
    assert got is None and "Dimension out of range" in err, err
    got, err = shims.call("topk", torch.ones(4, dtype=torch.bool, device="cuda"), 1, 0, True)
    assert got is None and "not implemented for 'Bool'" in err, err
    got, _ = shims.call("sort", x, 1, True)  # and the next call works
    assert got is not None and same(got[0], torch.sort(x, 1, descending=True).values)


class ArgsortHead(torch.nn.Module if torch is not None else object):
    """Top-k sampling head and an argsort/sort of scores: the three fallbacks Inductor emits for sort and topk."""

    def forward(self, logits, scores):
        probs = torch.softmax(logits.float(), -1)
        top, idx = torch.topk(probs, 50, dim=-1)
        order = torch.argsort(scores, dim=1, descending=True, stable=True)
        ranked, _ = torch.sort(scores.t().contiguous(), dim=0)
        return top / top.sum(-1, keepdim=True), idx, order, ranked


@requires_gpu
def test_models_that_sort_lower_onto_the_shims_and_match_eager():
    import aotirt
    g = torch.Generator(device="cuda").manual_seed(0)
    make = lambda: (torch.randn(4, 8192, device="cuda", generator=g),  # noqa: E731
                    torch.randn(6, 3000, device="cuda", generator=g))
    model, path = compiled("sort_head", lambda: ArgsortHead().cuda().eval(), make(),
                           options=aotirt.CompileOptions(max_autotune=False))
    import zipfile
    with zipfile.ZipFile(path) as z:
        src = z.read(next(n for n in z.namelist() if n.endswith(".wrapper.cpp"))).decode()
    assert "aoti_torch_cuda_topk(" in src and "aoti_torch_cuda_sort" in src, "the sort fallbacks were not called"
    runner = aotirt.load(path)
    captured = aotirt.capture(runner, *make())
    for run in (runner, captured):
        for _ in range(2):
            xs = make()
            want = model(*xs)
            got = run(*xs)
            for w, o in zip(want, got):
                if w.dtype == torch.int64:
                    assert torch.equal(o, w)
                else:
                    torch.testing.assert_close(o, w, atol=1e-6, rtol=1e-5)
