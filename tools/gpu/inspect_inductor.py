"""Compiles a few small models with AOTInductor (link_libtorch=False) on a GPU machine and dumps what a
libtorch-free runtime must handle: package listings, undefined symbols of each wrapper .so, generated code, and
torch's AOTI headers. Run on the GPU machine: python tools/gpu/inspect_inductor.py OUT_DIR"""
import json, os, shutil, subprocess, sys, tarfile, time, traceback, zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
info = {"torch": torch.__version__, "cuda": torch.version.cuda, "results": {}}

inc = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc", "inductor")
with tarfile.open(os.path.join(out, "inductor_headers.tar.gz"), "w:gz") as tf:
    tf.add(inc, arcname="inductor")
try:
    import torch._inductor.config as ic
    info["has_on_disk_format"] = hasattr(ic.aot_inductor, "package_constants_on_disk_format")
except Exception as e:
    info["cfg_err"] = repr(e)


class MLP(nn.Module):
    def __init__(s):
        super().__init__(); s.l1 = nn.Linear(64, 128); s.l2 = nn.Linear(128, 32)
    def forward(s, x):
        return s.l2(F.gelu(s.l1(x)))


class Conv(nn.Module):
    def __init__(s):
        super().__init__(); s.c1 = nn.Conv2d(3, 8, 3, padding=1); s.c2 = nn.Conv2d(8, 8, 3, stride=2)
    def forward(s, x):
        return s.c2(F.relu(s.c1(x))).mean(dim=(2, 3))


class Attn(nn.Module):
    def __init__(s):
        super().__init__(); s.qkv = nn.Linear(64, 192); s.o = nn.Linear(64, 64)
    def forward(s, x):
        b, t, c = x.shape
        q, k, v = s.qkv(x).view(b, t, 3, 4, 16).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.o(y.transpose(1, 2).reshape(b, t, c))


class Multi(nn.Module):
    def forward(s, x, y):
        z = x * 2 + y
        return z, z.t(), (x + 1)[:, ::2], z.sum(0)


base = {"aot_inductor.link_libtorch": False, "aot_inductor.embed_kernel_binary": True,
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.package_constants_on_disk_format": "binary_blob"}
cases = [
    ("mlp_f32_noautotune", MLP(), (torch.randn(8, 64),), torch.float32, {"max_autotune": False}),
    ("mlp_bf16_aten", MLP(), (torch.randn(8, 64),), torch.bfloat16,
     {"max_autotune": True, "max_autotune_gemm_backends": "ATEN"}),
    ("mlp_f32_triton", MLP(), (torch.randn(8, 64),), torch.float32,
     {"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "max_autotune_conv_backends": "TRITON"}),
    ("conv_f32_triton", Conv(), (torch.randn(2, 3, 16, 16),), torch.float32,
     {"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "max_autotune_conv_backends": "TRITON"}),
    ("attn_bf16_noautotune", Attn(), (torch.randn(2, 16, 64),), torch.bfloat16, {"max_autotune": False}),
    ("multi_f16", Multi(), (torch.randn(6, 6), torch.randn(6, 6)), torch.float16, {"max_autotune": False}),
]
only = set(sys.argv[2:])
for name, m, args, dt, opts in cases:
    if only and name not in only:
        continue
    r = info["results"].setdefault(name, {})
    t0 = time.time()
    try:
        m = m.to("cuda", dt).eval()
        args = tuple(a.to("cuda", dt) for a in args)
        with torch.no_grad(), torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
            ep = torch.export.export(m, args)
            pkg = torch._inductor.aoti_compile_and_package(
                ep, package_path=os.path.join(out, name + ".pt2"), inductor_configs={**base, **opts})
        r["compile_s"] = round(time.time() - t0, 1)
        with zipfile.ZipFile(pkg) as z:
            r["files"] = [(i.filename, i.file_size, i.compress_type) for i in z.infolist()]
            d = os.path.join(out, name + "_x"); z.extractall(d)
        sos = [os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs if f.endswith(".so")]
        for so in sos:
            r.setdefault("undef", {})[so] = subprocess.run(
                ["nm", "-D", "--undefined-only", so], capture_output=True, text=True).stdout.split("\n")
            r.setdefault("needed", {})[so] = subprocess.run(
                ["readelf", "-d", so], capture_output=True, text=True).stdout
            os.remove(so)  # keep the download small; the .pt2 still has it
        torch.manual_seed(0)
        with torch.no_grad():
            ref = m(*args)
        torch.save({"args": [a.cpu() for a in args],
                    "ref": [t.cpu() for t in (ref if isinstance(ref, tuple) else (ref,))]},
                   os.path.join(out, name + "_io.pt"))
    except Exception:
        r["error"] = traceback.format_exc()[-4000:]
    print(name, r.get("compile_s"), "ERR" if "error" in r else "ok", flush=True)
json.dump(info, open(os.path.join(out, "inspect.json"), "w"), indent=1)
