"""aotirt.tensorfile: safetensors read/write with json + numpy (round trips, layouts, bf16, corrupt files)."""
import json
import struct

import numpy as np
import pytest
import torch

import aotirt
from aotirt import tensorfile

NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                "float32", "float64"]
TORCH_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32,
                torch.int64, torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64,
                torch.float8_e4m3fn, torch.float8_e5m2]
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 1, 2)]
ST_NAME = {torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16", torch.uint16: "U16",
           torch.int32: "I32", torch.uint32: "U32", torch.int64: "I64", torch.uint64: "U64", torch.float16: "F16",
           torch.bfloat16: "BF16", torch.float32: "F32", torch.float64: "F64", torch.float8_e4m3fn: "F8_E4M3",
           torch.float8_e5m2: "F8_E5M2"}


def _np_values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(size=shape) * 100).astype(dtype)


def _torch_values(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        # Every bit pattern of the width, so sign and high bits are checked.
        bits = torch.randint(-2**31, 2**31 - 1, shape, generator=g, dtype=torch.int64)
        size = torch.empty((), dtype=dtype).element_size()
        signed = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
        return bits.to(signed).view(dtype) if size < 8 else (bits * 4294967311).view(dtype)
    return (torch.randn(shape, generator=g) * 10).to(dtype)


def _bits(t):
    """Bit patterns of a tensor (exact comparison for every dtype, NaN included)."""
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_numpy_round_trip(tmp_path, dtype, shape):
    a = _np_values(dtype, shape)
    path = str(tmp_path / "t.safetensors")
    tensorfile.save(path, {"a": a})
    b = tensorfile.load(path)["a"]
    assert b.dtype == np.dtype(dtype) and b.shape == shape
    np.testing.assert_array_equal(a, b)
    assert tensorfile.header(path)["a"] == {"dtype": tensorfile._NUMPY_TO_ST[dtype], "shape": list(shape)}


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES)
def test_torch_round_trip(tmp_path, dtype, shape):
    a = _torch_values(dtype, shape)
    path = str(tmp_path / "t.safetensors")
    tensorfile.save(path, [a])
    b = tensorfile.load(path, framework="torch")["0"]
    assert b.dtype == dtype and tuple(b.shape) == shape
    assert torch.equal(_bits(a), _bits(b))
    assert tensorfile.header(path)["0"]["dtype"] == ST_NAME[dtype]


def test_torch_file_read_by_numpy_and_back(tmp_path):
    a = {"f": torch.arange(6, dtype=torch.float32).reshape(2, 3), "i": torch.tensor([-1, 7], dtype=torch.int64)}
    path = str(tmp_path / "t.safetensors")
    tensorfile.save(path, a)
    n = tensorfile.load(path)
    np.testing.assert_array_equal(n["f"], a["f"].numpy())
    np.testing.assert_array_equal(n["i"], [-1, 7])


def test_non_contiguous_inputs_are_saved_in_logical_order(tmp_path):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    tb = torch.arange(60, dtype=torch.bfloat16).reshape(5, 12)
    views = {
        "np_T": base.T,  # transposed
        "np_step": base[::2, 1::3],  # strided with an offset
        "np_be": base.astype(">f4"),  # big-endian input
        "t_T": tb.t(),
        "t_slice": tb[1:4, 2:10:3],  # storage offset + stride
        "t_expand": torch.tensor([1, 2, 3], dtype=torch.int32).expand(4, 3),  # stride 0
    }
    assert not views["t_T"].is_contiguous() and not views["np_T"].flags.c_contiguous
    path = str(tmp_path / "v.safetensors")
    tensorfile.save(path, views)
    n = tensorfile.load(path)
    t = tensorfile.load(path, framework="torch")
    for k in ("np_T", "np_step", "np_be"):
        np.testing.assert_array_equal(n[k], np.ascontiguousarray(views[k]))
        assert n[k].shape == views[k].shape
    for k in ("t_T", "t_slice", "t_expand"):
        assert torch.equal(t[k], views[k].contiguous()), k
    assert n["np_be"].dtype == np.float32


def test_file_layout_matches_the_spec(tmp_path):
    path = str(tmp_path / "t.safetensors")
    tensorfile.save(path, {"b": np.array([True, False, True]), "x": np.array([1.5, -2.0], dtype=np.float32)},
                    metadata={"format": "pt"})
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0  # data section aligned
    head = json.loads(raw[8:8 + n])
    assert head["__metadata__"] == {"format": "pt"}
    assert head["b"] == {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}
    assert head["x"] == {"dtype": "F32", "shape": [2], "data_offsets": [3, 11]}
    assert raw[8 + n:] == b"\x01\x00\x01" + np.array([1.5, -2.0], dtype="<f4").tobytes()
    # x starts at an unaligned offset (3): load must still give a proper, aligned array
    x = tensorfile.load(path)["x"]
    assert x.flags.aligned and list(x) == [1.5, -2.0]


def test_interop_with_the_safetensors_package(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    st_torch = pytest.importorskip("safetensors.torch")
    ours = str(tmp_path / "ours.safetensors")
    a = {"w": torch.randn(3, 5).to(torch.bfloat16), "i": torch.arange(4, dtype=torch.int32), "s": torch.tensor(2.5)}
    tensorfile.save(ours, a)
    theirs_read = st_torch.load_file(ours)
    for k in a:
        assert torch.equal(_bits(theirs_read[k]), _bits(a[k])), k
    theirs = str(tmp_path / "theirs.safetensors")
    st_numpy.save_file({"z": np.zeros((2, 0)), "u": np.arange(7, dtype=np.uint16)}, theirs)
    back = tensorfile.load(theirs)
    assert back["z"].shape == (2, 0) and back["u"].dtype == np.uint16 and list(back["u"]) == list(range(7))


# dtypes safetensors.numpy reads and writes without ml_dtypes (it has no bfloat16 / float8 of its own).
ST_NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                   "float32", "float64"]


@pytest.mark.parametrize("dtype", ST_NUMPY_DTYPES)
def test_safetensors_numpy_files_load_here_and_ours_load_there(tmp_path, dtype):
    """Both directions, every dtype safetensors.numpy has, with shapes 0-d, empty and 3-d, and metadata."""
    st_numpy = pytest.importorskip("safetensors.numpy")
    from safetensors import safe_open
    tensors = {f"t{i}": np.asarray(_np_values(dtype, shape, seed=i), dtype=dtype)
               for i, shape in enumerate([(), (0,), (3, 4), (2, 1, 3)])}
    theirs = str(tmp_path / "theirs.safetensors")
    st_numpy.save_file(tensors, theirs, metadata={"by": "safetensors"})
    back = tensorfile.load(theirs)
    assert set(back) == set(tensors)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape, k
        np.testing.assert_array_equal(back[k], v)
    assert tensorfile.header(theirs)["__metadata__"] == {"by": "safetensors"}
    ours = str(tmp_path / "ours.safetensors")
    tensorfile.save(ours, tensors, metadata={"by": "aotirt"})
    there = st_numpy.load_file(ours)
    assert set(there) == set(tensors)
    for k, v in tensors.items():
        assert there[k].dtype == v.dtype and there[k].shape == v.shape, k
        np.testing.assert_array_equal(there[k], v)
    with safe_open(ours, framework="np") as f:
        assert f.metadata() == {"by": "aotirt"}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2])
def test_bf16_and_f8_files_interoperate_with_safetensors(tmp_path, dtype):
    """BF16/F8 both ways: safetensors.torch <-> aotirt.tensorfile (torch and numpy raw bits), and
    safetensors.numpy where ml_dtypes gives numpy a bfloat16 (without it, safetensors.numpy cannot load BF16 at all,
    one reason tensorfile keeps its own reader: docs/TENSOR_FILE.md)."""
    st_torch = pytest.importorskip("safetensors.torch")
    x = torch.tensor([[1.0, -2.5, 0.25], [3.0, -0.125, 448.0 if dtype != torch.float8_e5m2 else 57344.0]]).to(dtype)
    theirs = str(tmp_path / "theirs.safetensors")
    st_torch.save_file({"x": x}, theirs)
    assert torch.equal(_bits(tensorfile.load(theirs, framework="torch")["x"]), _bits(x))
    raw = tensorfile.load(theirs)["x"]
    np.testing.assert_array_equal(raw.view(np.uint8), _bits(x).numpy().view(np.uint8))
    assert tensorfile.header(theirs)["x"] == {"dtype": ST_NAME[dtype], "shape": [2, 3]}
    ours = str(tmp_path / "ours.safetensors")
    tensorfile.save(ours, {"x": x})
    assert torch.equal(_bits(st_torch.load_file(ours)["x"]), _bits(x))
    if dtype == torch.bfloat16:
        bits = str(tmp_path / "bits.safetensors")  # uint16 bits written as BF16 read back by safetensors as bf16
        tensorfile.save(bits, {"x": _bits(x).numpy().view(np.uint16)}, dtypes={"x": "BF16"})
        assert torch.equal(_bits(st_torch.load_file(bits)["x"]), _bits(x))
    if dtype == torch.bfloat16 and tensorfile._ml_dtypes() is not None:
        st_numpy = pytest.importorskip("safetensors.numpy")
        np.testing.assert_array_equal(st_numpy.load_file(ours)["x"].astype(np.float32), x.float().numpy())


def test_list_names_are_numeric_and_ordered_numerically(tmp_path):
    path = str(tmp_path / "l.safetensors")
    tensors = [np.full((1,), i, dtype=np.int32) for i in range(12)]
    tensorfile.save(path, tensors)
    loaded = tensorfile.load(path)
    assert list(loaded) == [str(i) for i in range(12)]  # "10" after "9", not after "1"
    assert [int(x[0]) for x in tensorfile.load_list(path)] == list(range(12))
    named = str(tmp_path / "named.safetensors")
    tensorfile.save(named, {"x": np.zeros(1), "y": np.zeros(1)})
    with pytest.raises(aotirt.TensorFileError, match="expected tensors named"):
        tensorfile.load_list(named)


def test_bf16_in_numpy_without_ml_dtypes_is_raw_bits(tmp_path, monkeypatch):
    monkeypatch.setattr(tensorfile, "_ml_dtypes", lambda: None)
    x = torch.tensor([1.0, -2.5, 3.140625, float("inf")], dtype=torch.bfloat16)
    path = str(tmp_path / "b.safetensors")
    tensorfile.save(path, {"x": x})
    bits = tensorfile.load(path)["x"]
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(bits, x.view(torch.int16).numpy().view(np.uint16))
    np.testing.assert_array_equal(tensorfile.bf16_bits_to_float32(bits), x.float().numpy())
    assert tensorfile.header(path)["x"]["dtype"] == "BF16"
    # bits written back with the override are BF16 again, identical to the original
    again = str(tmp_path / "b2.safetensors")
    tensorfile.save(again, {"x": bits}, dtypes={"x": "BF16"})
    assert torch.equal(tensorfile.load(again, framework="torch")["x"].view(torch.int16), x.view(torch.int16))


def test_bf16_with_ml_dtypes(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.0, -0.5, 7.0], dtype=ml_dtypes.bfloat16)
    path = str(tmp_path / "b.safetensors")
    tensorfile.save(path, {"x": x})
    y = tensorfile.load(path)["x"]
    assert y.dtype == ml_dtypes.bfloat16 and list(y.astype(np.float32)) == [1.0, -0.5, 7.0]
    assert tensorfile.header(path)["x"]["dtype"] == "BF16"


def test_float32_to_bf16_bits_rounds_like_torch():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(10000).astype(np.float32) * 1e3,
                        # exact ties (low 16 bits 0x8000) of even and odd bf16 neighbors, and specials
                        np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF], dtype=np.uint32).view(np.float32),
                        np.array([0.0, -0.0, np.inf, -np.inf], dtype=np.float32)])
    expected = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(tensorfile.float32_to_bf16_bits(x), expected)
    assert tensorfile.float32_to_bf16_bits(np.array([np.nan], dtype=np.float32))[0] == 0x7FC0


def _valid_file(tmp_path):
    path = tmp_path / "ok.safetensors"
    tensorfile.save(str(path), {"x": np.arange(8, dtype=np.float32)})
    return path.read_bytes()


@pytest.mark.parametrize("case,match", [
    ("empty", "too short"),
    ("four_bytes", "too short"),
    ("huge_header_len", "does not fit the file"),
    ("truncated_header", "does not fit the file"),
    ("bad_json", "not valid JSON"),
    ("json_list", "must be a JSON object"),
    ("truncated_data", "corrupt or truncated"),
    ("bad_dtype", "has dtype 'F128'"),
    ("missing_offsets", "lacks dtype/shape/data_offsets"),
    ("wrong_size", "do not match its size"),
])
def test_corrupt_files_give_a_clear_error(tmp_path, case, match):
    raw = _valid_file(tmp_path)
    (n,) = struct.unpack("<Q", raw[:8])
    head, data = json.loads(raw[8:8 + n]), raw[8 + n:]

    def build(h, d=data):
        b = json.dumps(h).encode()
        return struct.pack("<Q", len(b)) + b + d

    bad = {
        "empty": b"",
        "four_bytes": raw[:4],
        "huge_header_len": struct.pack("<Q", 2**40) + raw[8:],
        "truncated_header": raw[:8 + n // 2],
        "bad_json": struct.pack("<Q", 5) + b"{nope" + data,
        "json_list": build([1, 2]),
        "truncated_data": raw[:-4],
        "bad_dtype": build({"x": dict(head["x"], dtype="F128")}),
        "missing_offsets": build({"x": {"dtype": "F32", "shape": [8]}}),
        "wrong_size": build({"x": dict(head["x"], shape=[9])}),
    }[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(bad)
    with pytest.raises(aotirt.Error, match=match) as info:
        tensorfile.load(str(path))
    assert isinstance(info.value, aotirt.TensorFileError) and str(path) in str(info.value)
    with pytest.raises(aotirt.TensorFileError):
        tensorfile.load(str(path), framework="torch")
    with pytest.raises(aotirt.TensorFileError):
        tensorfile.header(str(path))


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(aotirt.TensorFileError, match="cannot read tensor file"):
        tensorfile.load(str(tmp_path / "nope.safetensors"))
    with pytest.raises(aotirt.TensorFileError, match="framework='jax' is not valid"):
        tensorfile.load(str(tmp_path / "nope.safetensors"), framework="jax")
    with pytest.raises(aotirt.TensorFileError, match="complex64 has no safetensors name"):
        tensorfile.save(str(tmp_path / "c.safetensors"), {"c": np.zeros(2, dtype=np.complex64)})
    with pytest.raises(aotirt.TensorFileError, match="dict or a list"):
        tensorfile.save(str(tmp_path / "c.safetensors"), np.zeros(2))
    with pytest.raises(aotirt.TensorFileError, match="cannot store float32 .4 bytes. as BF16"):
        tensorfile.save(str(tmp_path / "c.safetensors"), {"x": np.zeros(2, np.float32)}, dtypes={"x": "BF16"})
    with pytest.raises(aotirt.TensorFileError, match="not among the tensors"):
        tensorfile.save(str(tmp_path / "c.safetensors"), {"x": np.zeros(2)}, dtypes={"y": "BF16"})
    assert not (tmp_path / "c.safetensors").exists()
