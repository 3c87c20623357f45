"""Scratch: where our single graph call's host time goes (attention T=1024, cuDNN, alias_inputs)."""
import os, statistics, tempfile, time
import torch, aotirt
F = torch.nn.functional
class M(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
xs = [torch.randn(2, 16, 1024, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
path = os.path.join(tempfile.mkdtemp(), "a.pt2")
aotirt.compile(M(), xs, path, options=aotirt.CompileOptions(max_autotune=False, attention_backend="CUDNN"))
r = aotirt.load(path)
g = aotirt.capture(r, *xs, alias_inputs=True)
from torch.nn.attention import SDPBackend, sdpa_kernel
tg = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for _ in range(3): M()(*xs)
        torch.cuda.synchronize()
        with torch.cuda.graph(tg):
            tout = M()(*xs)
torch.cuda.synchronize()

def host_us(f, n=100, rounds=20):
    res = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n): f()
        res.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(res)

def event_ms(f, n=200):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        e0.record(); f(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    return statistics.median(ts) * 1e3

dev = 0
nat = g._graph
stream = int(torch.cuda.current_stream(dev).cuda_stream)
pieces = {
    "ours g(*xs)": lambda: g(*xs),
    "ours run_list": lambda: g.run_list(xs, output="torch"),
    "ours _replay_torch": lambda: g._replay_torch(torch, xs),
    "to_dlpack x3": lambda: [torch.utils.dlpack.to_dlpack(x) for x in xs],
    "current_stream": lambda: int(torch.cuda.current_stream(dev).cuda_stream),
    "native replay": lambda: nat.replay([torch.utils.dlpack.to_dlpack(x) for x in xs], stream, False),
    "torch graph replay": lambda: tg.replay(),
    "x.data_ptr x3": lambda: [x.data_ptr() for x in xs],
}
for k, f in pieces.items():
    print(f"{k:24s} host {host_us(f):7.2f} us", flush=True)
print(f"event single call ours {event_ms(lambda: g(*xs)):.1f} us, torch graph {event_ms(tg.replay):.1f} us, "
      f"native replay {event_ms(pieces['native replay']):.1f} us")
import cProfile, pstats
pr = cProfile.Profile(); pr.enable()
for _ in range(2000): g(*xs)
pr.disable(); torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(15)
