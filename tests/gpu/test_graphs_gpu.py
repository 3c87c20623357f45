"""Whole-model CUDA graphs (aotirt.capture / CapturedModel): replays with new inputs match eager; capture failures
are clear errors and the model keeps running eagerly."""
import pytest

from conftest import HAVE_CUDA, TOL, requires_gpu

if HAVE_CUDA:
    import torch
    from test_runtime_gpu import _flat, build


@requires_gpu
@pytest.mark.parametrize("name,dtype_name", [("mlp", "float32"), ("attn", "bfloat16"), ("multi", "float16")])
def test_replay_with_new_inputs_matches_eager(name, dtype_name):
    import aotirt
    model, path, make_inputs, dt = build(name, dtype_name)
    runner = aotirt.load(path)
    graphed = aotirt.capture(runner, *make_inputs(dt))
    for _ in range(4):
        inputs = make_inputs(dt)
        with torch.no_grad():
            want = model(*inputs)
        got = graphed(*inputs)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        want = list(want) if isinstance(want, (list, tuple)) else [want]
        for g, w in zip(got, want):
            if w.is_floating_point():
                torch.testing.assert_close(g, w, **TOL[dtype_name])
            else:
                assert torch.equal(g, w)
    # The eager path still works next to the graph.
    x = make_inputs(dt)
    with torch.no_grad():
        want = model(*x)
    eager = runner(*x)
    eager = eager[0] if isinstance(eager, (list, tuple)) else eager
    want = want[0] if isinstance(want, (list, tuple)) else want
    if want.is_floating_point():
        torch.testing.assert_close(eager, want, **TOL[dtype_name])


@requires_gpu
def test_capture_failure_is_clear_and_model_keeps_running():
    import aotirt
    from aotirt import errors as aerrors
    model, path, make_inputs, dt = build("mlp", "float32")
    runner = aotirt.load(path)
    with pytest.raises(aerrors.Error) as info:
        aotirt.capture(runner, *make_inputs(dt), stream=0)
    assert "default stream" in str(info.value)
    # The model keeps running eagerly after the refused capture.
    x = make_inputs(dt)
    with torch.no_grad():
        torch.testing.assert_close(runner(*x), model(*x), **TOL["float32"])


@requires_gpu
def test_graph_outputs_are_overwritten_by_next_replay():
    import aotirt
    model, path, make_inputs, dt = build("mlp", "float32")
    graphed = aotirt.capture(aotirt.load(path), *make_inputs(dt))
    a = graphed(*make_inputs(dt))
    a_copy = a.clone()
    b = graphed(torch.zeros_like(make_inputs(dt)[0]))
    torch.cuda.synchronize()
    assert a.data_ptr() == b.data_ptr()  # static buffers, as documented
    assert not torch.equal(a, a_copy)


@requires_gpu
def test_replay_with_wrong_inputs_is_an_error_and_the_graph_keeps_working():
    import aotirt
    from aotirt import errors as aerrors
    model, path, make_inputs, dt = build("mlp", "float32")
    graphed = aotirt.capture(aotirt.load(path), *make_inputs(dt))
    with pytest.raises(aerrors.InputError, match="takes 1 input"):
        graphed()
    with pytest.raises(aerrors.RunError, match=r"graph input 0 has 960 elements, the graph was captured with 768"):
        graphed(torch.randn(10, 96, device="cuda"))
    # Same element count, other dtype or shape: refused like an eager run (copy_ would convert or reshape silently).
    with pytest.raises(aerrors.RunError, match=r"graph input 0 has dtype code 5, the graph was captured with 6"):
        graphed(torch.randn(8, 96, device="cuda", dtype=torch.float16))
    with pytest.raises(aerrors.RunError, match=r"graph input 0 has shape \[96, 8\], the graph was captured with "
                                               r"\[8, 96\]"):
        graphed(torch.randn(96, 8, device="cuda"))
    x = make_inputs(dt)
    with torch.no_grad():
        torch.testing.assert_close(graphed(*x), model(*x), **TOL["float32"])


@requires_gpu
def test_replays_follow_torchs_current_stream_and_stay_ordered_across_streams():
    """The lean torch path replays on torch's current stream: inputs made on a side stream are read there (no
    synchronization by the caller), and replays alternating between two streams, each output cloned on its stream
    right after, all match eager (each replay is ordered after the previous one: they share the static buffers)."""
    import aotirt
    model, path, make_inputs, dt = build("mlp", "float32")
    graphed = aotirt.capture(aotirt.load(path), *make_inputs(dt))
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    xs = [make_inputs(dt)[0] for _ in range(8)]
    got = []
    for i, x in enumerate(xs):
        s = streams[i % 2]
        with torch.cuda.stream(s):
            s.wait_stream(torch.cuda.default_stream())  # x was made on the default stream
            big = x * 1.0 + torch.zeros(4096, 4096, device="cuda").sum() * 0  # work queued on s before the replay
            y = graphed(big)
            got.append(y.clone())  # on s, right after the replay that made it
    torch.cuda.synchronize()
    for x, g in zip(xs, got):
        with torch.no_grad():
            torch.testing.assert_close(g, model(x), **TOL["float32"])
    # Same output objects every call (static buffers, as torch.cuda.CUDAGraph's)
    assert graphed(xs[0]) is graphed(xs[1])


@requires_gpu
def test_alias_inputs_reads_the_callers_tensors_and_copies_only_others():
    import aotirt
    model, path, make_inputs, dt = build("mlp", "float32")
    x = make_inputs(dt)[0]
    graphed = aotirt.capture(aotirt.load(path), x, alias_inputs=True)
    for _ in range(3):
        x.copy_(torch.randn_like(x))  # updated in place, as a static input is
        y = graphed(x)
        with torch.no_grad():
            torch.testing.assert_close(y, model(x), **TOL["float32"])
    assert graphed.input_copies == 0
    z = torch.randn_like(x)
    y = graphed(z)  # another tensor: copied into x's memory
    torch.cuda.synchronize()
    assert graphed.input_copies == 1 and torch.equal(x, z)
    with torch.no_grad():
        torch.testing.assert_close(y, model(z), **TOL["float32"])
    # Without alias_inputs every call copies.
    plain = aotirt.capture(aotirt.load(path), x)
    plain(x)
    plain(x)
    assert plain.input_copies == 2
    with pytest.raises(aotirt.InputError, match="DLPack device type 1"):  # a host tensor cannot be the static input
        aotirt.capture(aotirt.load(path), x.cpu(), alias_inputs=True)


@requires_gpu
def test_raw_cuda_graph_exec_launches_the_graph_itself():
    """The native graph's raw_cuda_graph_exec (as torch's CUDAGraph.raw_cuda_graph_exec()) is the instantiated graph:
    cudaGraphLaunch on it by ctypes reruns the model on the static buffers; raw_cuda_graph is the graph it came
    from."""
    import ctypes
    import aotirt
    model, path, make_inputs, dt = build("mlp", "float32")
    x = make_inputs(dt)[0]
    graphed = aotirt.capture(aotirt.load(path), x, alias_inputs=True)
    y = graphed(x)  # the torch outputs: the static outputs, overwritten by every launch
    exec_ = graphed._graph.raw_cuda_graph_exec
    assert isinstance(exec_, int) and exec_ != 0
    rt = ctypes.CDLL("libcudart.so." + torch.version.cuda.split(".")[0])
    torch.cuda.synchronize()
    x.copy_(torch.randn_like(x))
    torch.cuda.synchronize()
    assert rt.cudaGraphLaunch(ctypes.c_void_p(exec_), ctypes.c_void_p(0)) == 0
    torch.cuda.synchronize()
    with torch.no_grad():
        torch.testing.assert_close(y, model(x), **TOL["float32"])
    # raw_cuda_graph: the graph behind that exec; its node count is what the capture counted.
    graph = graphed._graph.raw_cuda_graph
    assert isinstance(graph, int) and graph != 0
    n = ctypes.c_size_t(0)
    assert rt.cudaGraphGetNodes(ctypes.c_void_p(graph), None, ctypes.byref(n)) == 0
    st = graphed.graph_stats
    assert n.value == sum(st[k] for k in ("kernels", "mem_allocs", "mem_frees", "memsets", "memcpys", "other_nodes"))


@requires_gpu
@pytest.mark.parametrize("name,dtype_name", [("attn", "bfloat16"), ("multi", "float16")])
def test_capture_pool_keeps_memory_nodes_out_of_the_graph(name, dtype_name, monkeypatch):
    """By default (and with AOTIRT_CAPTURE_POOL=1) the shims' allocations while capturing come from a capture pool
    made outside the graph: the graph holds no memory nodes (which cost host time per launch,
    benchmarks/graph_launch.py), and replays match eager; with AOTIRT_CAPTURE_POOL=0 the same capture holds memory
    nodes (the contrast the first half needs)."""
    import aotirt
    model, path, make_inputs, dt = build(name, dtype_name)
    runner = aotirt.load(path)
    monkeypatch.delenv("AOTIRT_CAPTURE_POOL", raising=False)
    default = aotirt.capture(runner, *make_inputs(dt))  # the default: the pool
    monkeypatch.setenv("AOTIRT_CAPTURE_POOL", "1")
    pooled = aotirt.capture(runner, *make_inputs(dt))
    st = pooled.graph_stats
    assert st["pooled"] and st["mem_allocs"] == 0 and st["mem_frees"] == 0, st
    assert st["kernels"] > 0 and st["pool_blocks"] > 0 and st["pool_bytes"] > 0, st
    assert st["pool_allocations"] >= st["pool_blocks"], st
    assert default.graph_stats["pooled"] and default.graph_stats["mem_allocs"] == 0, default.graph_stats
    monkeypatch.setenv("AOTIRT_CAPTURE_POOL", "0")
    plain = aotirt.capture(runner, *make_inputs(dt))  # no pool: memory nodes in the graph
    monkeypatch.delenv("AOTIRT_CAPTURE_POOL")
    sp = plain.graph_stats
    assert not sp["pooled"] and sp["mem_allocs"] > 0, sp
    # cuDNN's own memset (attn) is a fill kernel in the pooled graph; one with memory nodes cannot be edited, keeps it
    assert sp["memsets_replaced"] == 0 and st["memsets"] == 0, (sp, st)
    assert sp["kernels"] + sp["memsets"] == st["kernels"], (sp, st)
    for _ in range(3):
        inputs = make_inputs(dt)
        with torch.no_grad():
            want = _flat(model(*inputs))
        for graphed in (default, pooled, plain):
            got = _flat(graphed(*inputs))
            for g, w in zip(got, want):
                if w.is_floating_point():
                    torch.testing.assert_close(g, w, **TOL[dtype_name])
                else:
                    assert torch.equal(g, w)


@requires_gpu
def test_outputs_a_caller_keeps_outlive_the_graph_and_its_pool(monkeypatch):
    """An output tensor still held after the captured runner is gone keeps its pool block: later allocations (eager
    runs, a new capture) never take that memory, and the rest of the pool was given back."""
    import gc

    import aotirt
    monkeypatch.setenv("AOTIRT_CAPTURE_POOL", "1")
    model, path, make_inputs, dt = build("mlp", "float32")
    runner = aotirt.load(path)
    graphed = aotirt.capture(runner, *make_inputs(dt))
    x = make_inputs(dt)
    kept = graphed(*x)
    kept = kept[0] if isinstance(kept, (list, tuple)) else kept
    torch.cuda.synchronize()
    want = kept.clone()
    del graphed
    gc.collect()
    torch.cuda.synchronize()
    for _ in range(3):  # new allocations of our runtime, eager and captured, of the same sizes
        again = aotirt.capture(runner, *make_inputs(dt))
        again(*make_inputs(dt))
        runner(*make_inputs(dt))
        del again
        gc.collect()
    torch.cuda.synchronize()
    assert torch.equal(kept, want)
    with torch.no_grad():
        torch.testing.assert_close(kept, model(*x), **TOL["float32"])


@requires_gpu
def test_cudnn_plans_are_kept_by_the_capture_pool_not_by_user_objects(tmp_path, monkeypatch):
    """The cuDNN shims build their graphs with cudnn-frontend's retention NONE. A CapturedModel's capture pool keeps
    the plans its graph launches (pool_retained: one per cuDNN call captured), so the graph holds no CUDA user object;
    without the pool the shims attach one themselves (what the frontend does by default). Both graphs replay what
    eager computes, next to each other and to eager runs that use the same cached plans."""
    import aotirt
    F = torch.nn.functional

    class Attn(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def make():
        return [torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3)]

    path = str(tmp_path / "attn.pt2")
    aotirt.compile(Attn(), make(), path, options=aotirt.CompileOptions(max_autotune=False, attention_backend="CUDNN"))
    runner = aotirt.load(path)
    monkeypatch.delenv("AOTIRT_CAPTURE_POOL", raising=False)
    pooled = aotirt.capture(runner, *make())
    assert pooled.graph_stats["pooled"] and pooled.graph_stats["pool_retained"] >= 1, pooled.graph_stats
    monkeypatch.setenv("AOTIRT_CAPTURE_POOL", "0")
    plain = aotirt.capture(runner, *make())
    monkeypatch.delenv("AOTIRT_CAPTURE_POOL")
    assert not plain.graph_stats["pooled"] and plain.graph_stats["pool_retained"] == 0, plain.graph_stats
    for _ in range(3):
        x = make()
        want = Attn()(*x)
        for got in (pooled(*x), plain(*x), runner(*x)):
            torch.testing.assert_close(got, want, **TOL["bfloat16"])
