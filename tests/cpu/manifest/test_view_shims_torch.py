"""The view shims Inductor emits around complex tensors (aoti_torch_cuda_permute, _slice_Tensor, _reshape,
_view_as_real, _view_as_complex, _view_dtype) and scalar_to_tensor (complex64/complex128 included), run on CPU
tensors of the built libaoti_cuda_shims.so (they are metadata only, or a host copy, so no GPU is needed) against
torch's own ops on the same tensor, over random shapes and layouts: sizes, strides, storage offsets and dtypes equal
torch's; reshape is a view exactly where torch's is and otherwise a contiguous copy with torch's values; refusals
carry torch's reasons.

The library path comes from $AOTIRT_SHIM_LIB (set by the Bazel target from its data dependency)."""
from __future__ import annotations

import ctypes
import os
import random

import pytest
import torch

H = ctypes.c_void_p
I64 = ctypes.c_int64
I64P = ctypes.POINTER(I64)
CODES = {torch.float32: 6, torch.float64: 7, torch.int64: 4, torch.complex64: 9, torch.complex128: 10,
         torch.float16: 5, torch.int32: 3, torch.bool: 11, torch.uint8: 0, torch.int8: 1, torch.int16: 2,
         torch.bfloat16: 15}
DTYPES = {v: k for k, v in CODES.items()}


def _lib_path() -> str:
    path = os.environ.get("AOTIRT_SHIM_LIB", "")
    if not path:
        pytest.fail("AOTIRT_SHIM_LIB is not set: run through `bazel test //tests/cpu/manifest:test_view_shims_torch`")
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""), path)
    return os.path.abspath(path)


class Lib:
    def __init__(self):
        L = self.L = ctypes.CDLL(_lib_path(), mode=ctypes.RTLD_LOCAL)
        L.aoti_torch_create_tensor_from_blob.argtypes = [H, I64, I64P, I64P, I64, ctypes.c_int32, ctypes.c_int32,
                                                         ctypes.c_int32, ctypes.POINTER(H)]
        L.aoti_torch_delete_tensor_object.argtypes = [H]
        L.aotirt_last_error.restype = ctypes.c_char_p
        for n in ("aoti_torch_get_sizes", "aoti_torch_get_strides"):
            getattr(L, n).argtypes = [H, ctypes.POINTER(I64P)]
        L.aoti_torch_get_dim.argtypes = [H, I64P]
        L.aoti_torch_get_storage_offset.argtypes = [H, I64P]
        L.aoti_torch_get_dtype.argtypes = [H, ctypes.POINTER(ctypes.c_int32)]
        L.aoti_torch_get_data_ptr.argtypes = [H, ctypes.POINTER(H)]
        L.aoti_torch_copy_.argtypes = [H, H, ctypes.c_int32]
        L.aoti_torch_cuda_permute.argtypes = [H, I64P, I64, ctypes.POINTER(H)]
        L.aoti_torch_cuda_reshape.argtypes = [H, I64P, I64, ctypes.POINTER(H)]
        L.aoti_torch_cuda_slice_Tensor.argtypes = [H, I64, I64P, I64P, I64, ctypes.POINTER(H)]
        L.aoti_torch_cuda_view_as_real.argtypes = [H, ctypes.POINTER(H)]
        L.aoti_torch_cuda_view_as_complex.argtypes = [H, ctypes.POINTER(H)]
        L.aoti_torch_cuda_view_dtype.argtypes = [H, ctypes.c_int32, ctypes.POINTER(H)]

    def wrap(self, t: torch.Tensor):
        """A borrowed CPU handle over t's storage, with t's sizes, strides and storage offset."""
        n = t.dim()
        sizes, strides = (I64 * max(n, 1))(*t.shape), (I64 * max(n, 1))(*t.stride())
        base = t.untyped_storage().data_ptr()
        h = H()
        assert self.L.aoti_torch_create_tensor_from_blob(base, n, sizes, strides, t.storage_offset(), CODES[t.dtype],
                                                         0, 0, ctypes.byref(h)) == 0, self.error()
        return h

    def error(self) -> str:
        return self.L.aotirt_last_error().decode()

    def meta(self, h):
        n, off, dt = I64(), I64(), ctypes.c_int32()
        self.L.aoti_torch_get_dim(h, ctypes.byref(n))
        sp, tp, p = I64P(), I64P(), H()
        self.L.aoti_torch_get_sizes(h, ctypes.byref(sp))
        self.L.aoti_torch_get_strides(h, ctypes.byref(tp))
        self.L.aoti_torch_get_storage_offset(h, ctypes.byref(off))
        self.L.aoti_torch_get_dtype(h, ctypes.byref(dt))
        self.L.aoti_torch_get_data_ptr(h, ctypes.byref(p))
        return ([sp[i] for i in range(n.value)], [tp[i] for i in range(n.value)], off.value, DTYPES[dt.value],
                p.value or 0)

    def call(self, name, *args):
        """(handle, "") or (None, error) of a shim whose last argument is its return pointer."""
        r = H()
        rc = getattr(self.L, name)(*args, ctypes.byref(r))
        return (r, "") if rc == 0 else (None, self.error())

    def values(self, h, sizes, dtype):
        """A torch copy of the tensor behind our handle (through aoti_torch_copy_ into a torch-owned blob)."""
        dst = torch.empty(sizes, dtype=dtype)
        dh = self.wrap(dst)
        try:
            assert self.L.aoti_torch_copy_(dh, h, 0) == 0, self.error()
        finally:
            self.L.aoti_torch_delete_tensor_object(dh)
        return dst

    def delete(self, *hs):
        for h in hs:
            if h:
                assert self.L.aoti_torch_delete_tensor_object(h) == 0


@pytest.fixture(scope="module")
def lib():
    return Lib()


def _rand_tensor(rng):
    ndim = rng.randint(0, 4)
    sizes = [rng.choice([0, 1, 1, 2, 3, 4, 6]) if rng.random() < 0.15 else rng.choice([1, 2, 3, 4, 6]) for _ in
             range(ndim)]
    dtype = rng.choice([torch.float32, torch.complex64, torch.complex128, torch.int64])
    ndim = len(sizes)
    make = lambda s: torch.randn(s, dtype=torch.float64).mul(8).to(dtype)  # noqa: E731
    kind = rng.choice(["contiguous", "permuted", "sliced", "expanded"]) if ndim else "contiguous"
    if kind == "permuted" and ndim > 1:
        perm = list(range(ndim))
        rng.shuffle(perm)
        x = make([sizes[p] for p in perm]).permute([perm.index(i) for i in range(ndim)])
    elif kind == "sliced":
        d = rng.randrange(ndim)
        big = list(sizes)
        big[d] = 2 * sizes[d] + 1
        x = make(big)[(slice(None),) * d + (slice(1, None, 2),)]
    elif kind == "expanded":
        d = rng.randrange(ndim)
        one = list(sizes)
        one[d] = 1
        x = make(one).expand(sizes)
    else:
        x = make(sizes)
    assert list(x.shape) == sizes
    return x


def _same_view(lib, h, want, x):
    sizes, strides, off, dtype, ptr = lib.meta(h)
    assert (sizes, strides, off, dtype) == (list(want.shape), list(want.stride()), want.storage_offset(), want.dtype)
    assert ptr == want.data_ptr() or want.numel() == 0


def test_permute_matches_torch(lib):
    rng = random.Random(1)
    for _ in range(300):
        x = _rand_tensor(rng)
        n = x.dim()
        dims = list(range(n))
        rng.shuffle(dims)
        dims = [d - n if rng.random() < 0.3 else d for d in dims]
        h = lib.wrap(x)
        r, err = lib.call("aoti_torch_cuda_permute", h, (I64 * max(n, 1))(*dims), n)
        assert r is not None, err
        _same_view(lib, r, x.permute(dims), x)
        lib.delete(h, r)
    h = lib.wrap(torch.zeros(2, 3))
    _, err = lib.call("aoti_torch_cuda_permute", h, (I64 * 3)(0, 1, 2), 3)
    assert "input.dim() = 2 is not equal to len(dims) = 3" in err, err
    _, err = lib.call("aoti_torch_cuda_permute", h, (I64 * 2)(1, -1), 2)
    assert "permute(): duplicate dims are not allowed." in err, err
    _, err = lib.call("aoti_torch_cuda_permute", h, (I64 * 2)(0, 2), 2)
    assert "Dimension out of range (expected to be in range of [-2, 1], but got 2)" in err, err
    lib.delete(h)


def test_slice_matches_torch(lib):
    rng = random.Random(2)
    for _ in range(400):
        x = _rand_tensor(rng)
        if x.dim() == 0:
            continue
        dim = rng.randrange(-x.dim(), x.dim())
        n = x.shape[dim]
        pick = lambda: None if rng.random() < 0.25 else rng.randint(-2 * n - 2, 2 * n + 2)  # noqa: E731
        start, end, step = pick(), pick(), rng.choice([1, 1, 2, 3, 7])
        want = torch.ops.aten.slice.Tensor(x, dim, start, end, step)
        h = lib.wrap(x)
        sp = ctypes.byref(I64(start)) if start is not None else None
        ep = ctypes.byref(I64(end)) if end is not None else None
        r, err = lib.call("aoti_torch_cuda_slice_Tensor", h, dim, sp, ep, step)
        assert r is not None, err
        _same_view(lib, r, want, x)
        lib.delete(h, r)
    # Huge steps: ceil(len / step) without overflow (torch's own (len + step - 1) / step wraps and gives 0 elements
    # for a step of 2**63 - 1, where there is one); the stride is torch's, step * stride wrapped to int64.
    x = torch.zeros(10, 3)
    for start, step in ((1, 2**63 - 1), (0, 2**63 - 1), (9, 2**63 - 1), (1, 2**62), (0, 2**62 + 1), (10, 2**63 - 1),
                        (3, 7)):
        for xt in (x, x.t()):
            h = lib.wrap(xt)
            r, err = lib.call("aoti_torch_cuda_slice_Tensor", h, 0, ctypes.byref(I64(start)), None, step)
            assert r is not None, err
            sizes, strides, off, _, _ = lib.meta(r)
            n = xt.shape[0]
            length = max(0, n - min(start, n))
            want_stride = (xt.stride(0) * step + 2**63) % 2**64 - 2**63
            assert (sizes, strides[0], off) == ([-(-length // step)] + list(xt.shape[1:]), want_stride,
                                                 min(start, n) * xt.stride(0)), (start, step, sizes, strides, off)
            if step < 2**62:
                _same_view(lib, r, torch.ops.aten.slice.Tensor(xt, 0, start, None, step), xt)
            lib.delete(h, r)
    h = lib.wrap(torch.zeros(4))
    _, err = lib.call("aoti_torch_cuda_slice_Tensor", h, 0, None, None, 0)
    assert "slice step must be positive" in err, err
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        torch.ops.aten.slice.Tensor(torch.zeros(4), 0, None, None, 0)
    h0 = lib.wrap(torch.tensor(1.0))
    _, err = lib.call("aoti_torch_cuda_slice_Tensor", h0, 0, None, None, 1)
    assert "slice() cannot be applied to a 0-dim tensor." in err, err
    lib.delete(h, h0)


def _new_shape(rng, numel, x):
    if rng.random() < 0.2:
        return list(reversed(list(x.shape)))
    if numel == 0:
        return rng.choice([[0], [0, 3], [2, 0, 1], list(x.shape)])
    fac = [f for f in range(1, numel + 1) if numel % f == 0]
    shape, rest = [], numel
    for _ in range(rng.randint(1, 4)):
        f = rng.choice([f for f in fac if rest % f == 0])
        shape.append(f)
        rest //= f
    shape.append(rest)
    rng.shuffle(shape)
    if rng.random() < 0.3:
        shape.insert(rng.randrange(len(shape) + 1), 1)
    if rng.random() < 0.4:
        shape[rng.randrange(len(shape))] = -1
    return shape


def test_reshape_is_a_view_where_torchs_is_and_a_copy_elsewhere(lib):
    rng = random.Random(3)
    views = copies = 0
    for _ in range(400):
        x = _rand_tensor(rng)
        shape = _new_shape(rng, x.numel(), x)
        want = torch.reshape(x, shape)
        is_view = want.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        h = lib.wrap(x)
        r, err = lib.call("aoti_torch_cuda_reshape", h, (I64 * max(len(shape), 1))(*shape), len(shape))
        assert r is not None, (x.shape, x.stride(), shape, err)
        sizes, strides, off, dtype, ptr = lib.meta(r)
        assert sizes == list(want.shape) and dtype == want.dtype
        if is_view:
            views += 1
            _same_view(lib, r, want, x)
        else:
            copies += 1
            assert strides == list(want.stride()) and off == 0 and ptr != x.untyped_storage().data_ptr()
            assert torch.equal(lib.values(r, sizes, dtype), want)
        lib.delete(h, r)
    assert views > 100 and copies > 30, (views, copies)
    h = lib.wrap(torch.zeros(2, 6))
    for shape, msg in (([5, -1], "shape '[5, -1]' is invalid for input of size 12"),
                       ([-1, -1], "only one dimension can be inferred"),
                       ([3, -2], "invalid shape dimension -2")):
        _, err = lib.call("aoti_torch_cuda_reshape", h, (I64 * 2)(*shape), 2)
        assert msg in err, err
        with pytest.raises(RuntimeError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            torch.zeros(2, 6).reshape(shape)
    h0 = lib.wrap(torch.zeros(0, 3))
    _, err = lib.call("aoti_torch_cuda_reshape", h0, (I64 * 2)(0, -1), 2)
    assert "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension size -1 can be " \
           "any value and is ambiguous" in err, err
    lib.delete(h, h0)


def test_view_as_real_and_complex_match_torch(lib):
    rng = random.Random(4)
    for _ in range(200):
        x = _rand_tensor(rng)
        if not x.dtype.is_complex:
            continue
        h = lib.wrap(x)
        r, err = lib.call("aoti_torch_cuda_view_as_real", h)
        assert r is not None, err
        want = torch.view_as_real(x)
        _same_view(lib, r, want, x)
        c, err = lib.call("aoti_torch_cuda_view_as_complex", r)
        if want.stride()[-1] == 1 and all(s % 2 == 0 for s in want.stride()[:-1]):
            assert c is not None, err
            _same_view(lib, c, torch.view_as_complex(want), x)
        lib.delete(h, r, c)


ALL_DTYPES = sorted(CODES, key=lambda d: CODES[d])


def _rand_view_dtype_operand(rng):
    """A tensor of any stored dtype in a random layout, often one that view(dtype) takes: last dims of 1 to 16
    elements, slices that keep stride(-1) 1 but move the storage offset, permutations, expansions."""
    ndim = rng.randint(0, 4)
    sizes = [rng.choice([0, 1, 2, 3, 4, 6, 8, 8, 16, 16]) if rng.random() < 0.9 else 0 for _ in range(ndim)]
    if ndim and rng.random() < 0.1:
        sizes[rng.randrange(ndim)] = 0
    dtype = rng.choice(ALL_DTYPES)
    make = lambda s: torch.zeros(s, dtype=dtype)  # noqa: E731
    kind = rng.choice(["contiguous", "contiguous", "permuted", "offset", "sliced", "expanded"]) if ndim else "plain"
    if kind == "permuted" and ndim > 1:
        perm = list(range(ndim))
        rng.shuffle(perm)
        x = make([sizes[p] for p in perm]).permute([perm.index(i) for i in range(ndim)])
    elif kind == "offset":  # stride(-1) stays 1; the storage offset and outer strides are not multiples of 8
        big = list(sizes)
        extra = rng.choice([1, 2, 4, 8])
        big[-1] += extra
        lo = rng.randint(0, extra)
        x = make(big)[..., lo:lo + sizes[-1]]
    elif kind == "sliced":
        d = rng.randrange(ndim)
        big = list(sizes)
        big[d] = 2 * sizes[d] + 1
        x = make(big)[(slice(None),) * d + (slice(1, None, 2),)]
    elif kind == "expanded":
        d = rng.randrange(ndim)
        one = list(sizes)
        one[d] = 1
        x = make(one).expand(sizes)
    else:
        x = make(sizes)
    assert list(x.shape) == sizes
    return x


def test_view_dtype_matches_torch_for_every_dtype_pair(lib):
    """aoti_torch_cuda_view_dtype (Inductor's view.dtype, e.g. in a complex `a + b`) against Tensor.view(dtype):
    every pair of stored dtypes on random layouts; torch's view where it has one (the same storage, no copy), torch's
    message where it refuses."""
    rng = random.Random(5)
    ok, refused, pairs = 0, {}, set()
    for i in range(3000):
        x = _rand_view_dtype_operand(rng)
        to = rng.choice(ALL_DTYPES)
        h = lib.wrap(x)
        r, err = lib.call("aoti_torch_cuda_view_dtype", h, CODES[to])
        try:
            want = x.view(to)
        except RuntimeError as e:
            assert r is None, (i, x.dtype, to, list(x.shape), x.stride(), x.storage_offset(), lib.meta(r))
            assert err == f"aoti_torch_cuda_view_dtype: {e}", (i, err, str(e))
            kind = str(e).split(" must ")[0].split(" cannot ")[0]
            refused[kind] = refused.get(kind, 0) + 1
        else:
            assert r is not None, (i, x.dtype, to, list(x.shape), x.stride(), x.storage_offset(), err)
            _same_view(lib, r, want, x)  # an alias of the same bytes
            ok += 1
            pairs.add((x.dtype, to))
        lib.delete(h, r)
    assert ok > 1000, ok
    # every refusal torch has, often (self.stride(d) for an outer dim d: in the upsizing case only)
    main = ("self.dim()", "self.stride(-1)", "self.size(-1)", "self.storage_offset()")
    assert all(refused.get(k, 0) >= 10 for k in main), refused
    assert sum(n for k, n in refused.items() if k not in main) >= 10, refused
    assert len(pairs) > 0.9 * len(ALL_DTYPES) ** 2, len(pairs)  # nearly every pair was viewed successfully


def test_view_dtype_every_pair_on_a_contiguous_tensor(lib):
    """Each of the 144 pairs on a [3, 16] tensor at storage offset 16 (a view always exists) and on a 0-d one."""
    for a in ALL_DTYPES:
        base = torch.zeros(4, 16, dtype=a)[1:]
        for b in ALL_DTYPES:
            h = lib.wrap(base)
            r, err = lib.call("aoti_torch_cuda_view_dtype", h, CODES[b])
            assert r is not None, (a, b, err)
            _same_view(lib, r, base.view(b), base)
            lib.delete(h, r)
            s = torch.zeros((), dtype=a)
            h = lib.wrap(s)
            r, err = lib.call("aoti_torch_cuda_view_dtype", h, CODES[b])
            if a.itemsize == b.itemsize:
                assert r is not None, err
                _same_view(lib, r, s.view(b), s)
            else:
                with pytest.raises(RuntimeError) as e:
                    s.view(b)
                assert r is None and err == f"aoti_torch_cuda_view_dtype: {e.value}", err
            lib.delete(h, r)


def test_view_dtype_refuses_codes_and_null_pointers(lib):
    h = lib.wrap(torch.zeros(2, 4))
    for code in (8, 16, 27, -1):  # complex32, quantized, uint16: not stored
        r, err = lib.call("aoti_torch_cuda_view_dtype", h, code)
        assert r is None and err.startswith(f"aoti_torch_cuda_view_dtype: unsupported dtype code {code} "), err
    assert lib.L.aoti_torch_cuda_view_dtype(h, 6, None) == 1
    assert lib.error() == "aoti_torch_cuda_view_dtype: ret0 is null"
    r, err = lib.call("aoti_torch_cuda_view_dtype", None, 6)
    assert r is None and err.startswith("aoti_torch_cuda_view_dtype: "), err
    lib.delete(h)


def test_view_dtype_as_inductor_uses_it_for_complex_addition(lib):
    """x.view(x.real.dtype) ... .view(complex dtype): complex64 [2, 3] -> float32 [2, 6] -> complex64 [2, 3], values
    shared with the original storage."""
    z = torch.randn(4, 3, dtype=torch.complex64)[1:3]
    h = lib.wrap(z)
    f, err = lib.call("aoti_torch_cuda_view_dtype", h, CODES[torch.float32])
    assert f is not None, err
    _same_view(lib, f, z.view(torch.float32), z)
    assert torch.equal(lib.values(f, [2, 6], torch.float32), z.view(torch.float32))
    c, err = lib.call("aoti_torch_cuda_view_dtype", f, CODES[torch.complex64])
    assert c is not None, err
    _same_view(lib, c, z, z)
    assert torch.equal(lib.values(c, [2, 3], torch.complex64), z)
    lib.delete(h, f, c)


class _C64(ctypes.Structure):  # c10::complex<float>, as the shim takes it by value
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class _C128(ctypes.Structure):  # c10::complex<double>
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


@pytest.mark.parametrize("name,ctype,dtype", [
    ("aoti_torch_scalar_to_tensor_complex64", _C64, torch.complex64),
    ("aoti_torch_scalar_to_tensor_complex128", _C128, torch.complex128),
])
def test_scalar_to_tensor_complex_makes_a_0d_cpu_tensor(lib, name, ctype, dtype):
    assert ctypes.sizeof(ctype) == (8 if dtype == torch.complex64 else 16)
    f = getattr(lib.L, name)
    f.argtypes = [ctype, ctypes.POINTER(H)]
    for value in (complex(2.5, -1.25), complex(-1e30, 3e-30), complex(0, 1), complex(float("inf"), -0.0)):
        r = H()
        assert f(ctype(value.real, value.imag), ctypes.byref(r)) == 0, lib.error()
        sizes, strides, off, got_dtype, _ = lib.meta(r)
        assert (sizes, strides, off, got_dtype) == ([], [], 0, dtype)
        got = lib.values(r, [], dtype)
        want = torch.scalar_tensor(value, dtype=dtype)
        assert torch.equal(torch.view_as_real(got), torch.view_as_real(want)), (got, want)
        lib.delete(r)
    assert f(ctype(1, 2), None) == 1 and lib.error() == f"{name}: ret_new_tensor is null"


@pytest.mark.parametrize("name,ctype,value,dtype", [
    ("aoti_torch_scalar_to_tensor_float32", ctypes.c_float, 2.5, torch.float32),
    ("aoti_torch_scalar_to_tensor_float64", ctypes.c_double, -1e300, torch.float64),
    ("aoti_torch_scalar_to_tensor_int64", ctypes.c_int64, -(1 << 62), torch.int64),
    ("aoti_torch_scalar_to_tensor_int32", ctypes.c_int32, -7, torch.int32),
    ("aoti_torch_scalar_to_tensor_int16", ctypes.c_int16, 300, torch.int16),
    ("aoti_torch_scalar_to_tensor_int8", ctypes.c_int8, -3, torch.int8),
    ("aoti_torch_scalar_to_tensor_uint8", ctypes.c_uint8, 250, torch.uint8),
    ("aoti_torch_scalar_to_tensor_bool", ctypes.c_bool, True, torch.bool),
])
def test_scalar_to_tensor_makes_a_0d_cpu_tensor(lib, name, ctype, value, dtype):
    f = getattr(lib.L, name)
    f.argtypes = [ctype, ctypes.POINTER(H)]
    r = H()
    assert f(value, ctypes.byref(r)) == 0, lib.error()
    sizes, strides, off, got_dtype, _ = lib.meta(r)
    assert (sizes, strides, off, got_dtype) == ([], [], 0, dtype)
    assert lib.values(r, [], dtype).item() == torch.scalar_tensor(value, dtype=dtype).item()
    lib.delete(r)
