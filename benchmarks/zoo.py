"""A zoo harness (issue 14): how far ~60 real models get through aotirt, stage by stage, and how fast they run.

    python benchmarks/zoo.py [--out DIR|FILE.json] [--models NAME,PREFIX,SOURCE,...] [--list] [--quick]
                             [--workers 4] [--timeout-s 240] [--dtype fp32|bf16|both] [--spec quick|default|both]
                             [--replays 30] [--export-only] [--budget-s S] [--work DIR] [--merge A.json,B.json]

Every model has random weights (seeded; nothing is downloaded) and small inputs (batch 1-2, images 224x224 or less,
sequences 64): torchvision classifiers and segmentation/detection heads, a handful of timm models
(pretrained=False), transformers models built from small configs, and hand-made patterns (top-k sampling, scatter/
gather, embedding bag, masked fill, sort, argsort, cumsum, index_put, ...). `--list` prints the zoo.

Stages, per model (and per dtype):
  build      construct the model and its inputs; a missing library or model is `skipped` with the reason
  export     torch.export.export on the GPU (record the failure)
  lower      aotirt.compile(exported program, max_autotune OFF): `refused` with the missing shims (the
             UnsupportedShimError's .shims), or the lowering error. --spec default (or both) adds rows (keys
             ending in +default) for the DEFAULT_SPEC subset lowered with aotirt's default options instead
             (max_autotune ON: slower compiles, the GEMM/attention/convolution backends a user gets)
  run        aotirt.load + run with the same inputs; compared with eager PyTorch at the dtype's tolerance
  time       median ms of --replays CUDA graph replays: ours (aotirt.capture) and eager under torch.cuda.CUDAGraph
Isolation: the build/export/lower stages run in --workers child processes (the models dealt round-robin), the
run/time stages in one child process after them (one at a time, so timings do not share the GPU); each child takes
its models one after the other and tells the parent when it starts each; a model that takes longer than
--timeout-s, or kills its process, is recorded (with the stage it was in) and a new child goes on with the rest.
Writes zoo.json and zoo.md (the table for benchmarks/RESULTS.md) beside it; progress on stderr. Exits 1 with the
reason where there is no GPU, unless --export-only (the build and export stages only, on the CPU). The parts that
need no GPU are tested by tests/cpu/test_zoo_bench.py.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # cliflags.py beside this file (also when loaded by path, as the CPU test does)
from cliflags import Flags, csv, nonnegative_float, positive_float, positive_int  # noqa: E402  (absl flags)
import provenance  # noqa: E402  (the commit a result came from, as every benchmark)

DTYPES = ("fp32", "bf16", "both")
TOL = {"fp32": (2e-3, 2e-3), "bf16": (6e-2, 6e-2)}  # (atol, rtol x max|ref|) per dtype; entries may override
QUICK = ("resnet18", "hf_bert", "hf_llama", "pat_topk_sampling", "pat_scatter_gather")
SPECS = ("quick", "default", "both")
# The rows --spec default adds: one model of each family, lowered with aotirt.CompileOptions() (max_autotune ON).
# hf_mixtral's grouped GEMMs run only there (Inductor's Triton template; with max_autotune OFF they are refused).
DEFAULT_SPEC = ("resnet50", "convnext_tiny", "vit_b_16", "hf_bert", "hf_llama", "hf_whisper_encoder",
                "hf_siglip_vision", "hf_mixtral", "pat_topk_sampling", "pat_embedding_bag", "pat_moe_experts")
SEQ, VOCAB, IMG = 64, 8192, 224
WARMUP = 3


def say(msg: str) -> None:
    print(f"[zoo {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================================================ the registry

class Entry:
    """One model of the zoo. build(torch) -> nn.Module (eval, float32, CPU); inputs(torch) -> tuple of CPU tensors
    (float ones are cast to the row's dtype). A builder that raises (ImportError for a missing library included)
    makes the model `skipped` with the reason.
      shape  the inputs, in words (for --list and the table)
      bf16   part of the bf16 subset (--dtype bf16|both)
      fp32   has fp32 rows (False for a bfloat16-only model: its rows are the bf16 ones)
      tol    (atol, rtol) overriding TOL for fp32 (bf16 scales TOL["bf16"] the same way)
    (A plain class: the module is also loaded by path, where a dataclass would need it in sys.modules.)"""

    def __init__(self, name: str, source: str, build: Callable[[Any], Any], inputs: Callable[[Any], tuple],
                 shape: str, bf16: bool = True, tol: tuple | None = None, note: str = "", fp32: bool = True):
        self.name, self.source, self.build, self.inputs, self.shape = name, source, build, inputs, shape
        self.bf16, self.tol, self.note, self.fp32 = bf16, tol, note, fp32

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, {self.source!r})"


def _gen(torch, seed: int = 0):
    return torch.Generator().manual_seed(seed)


def _image(b=1, c=3, h=IMG, w=None):
    return lambda torch: (torch.randn(b, c, h, w or h, generator=_gen(torch)),)


def _ids(b=1, s=SEQ, vocab=VOCAB):
    return lambda torch: (torch.randint(0, vocab, (b, s), generator=_gen(torch)),)


def _wrap(torch, model, pick: Callable):
    """model inside a module whose forward returns pick(model, *inputs) (a tensor or a tuple of tensors)."""
    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, *args):
            return pick(self.m, *args)

    Wrapped.__name__ = type(model).__name__
    return Wrapped().eval()


def _tv(fn: str, pick: Callable | None = None, **kw):
    def build(torch):
        import torchvision
        m = getattr(torchvision.models, fn, None) or getattr(torchvision.models.segmentation, fn, None) or \
            getattr(torchvision.models.detection, fn, None) or getattr(torchvision.models.video, fn, None)
        if m is None:
            raise ImportError(f"torchvision {torchvision.__version__} has no model {fn}")
        torch.manual_seed(0)  # after the import: the same weights whatever was imported before
        model = m(weights=None, **kw).eval()
        return _wrap(torch, model, pick) if pick else model
    return build


def _timm(name: str, **kw):
    def build(torch):
        import timm
        torch.manual_seed(0)
        return timm.create_model(name, pretrained=False, **kw).eval()
    return build


def _hf(cls: str, cfg_cls: str, cfg: dict, pick: Callable, model_from: Callable | None = None):
    def build(torch):
        import transformers
        config = getattr(transformers, cfg_cls)(**cfg)
        torch.manual_seed(0)
        model = getattr(transformers, cls)(config).eval()
        if model_from is not None:
            model = model_from(model)
        return _wrap(torch, model, pick)
    return build


_SMALL_ENC = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                  vocab_size=VOCAB)
_SMALL_DEC = dict(hidden_size=256, intermediate_size=704, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=512)
_SMALL_VIS = dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
                  image_size=IMG, patch_size=16)


def _lm(m, ids):
    return m(input_ids=ids, use_cache=False).logits


def _enc(m, ids):
    return m(input_ids=ids).last_hidden_state


def _pix(m, x):
    return m(pixel_values=x).last_hidden_state


# ---- hand-made patterns (torch.nn only) ---------------------------------------------------------------------------

def _pattern(forward: Callable, params: Callable | None = None):
    """A module whose forward is forward(self, *inputs); params(torch, module) adds its parameters/buffers."""
    def build(torch):
        class Pattern(torch.nn.Module):
            def __init__(self):
                super().__init__()
                if params:
                    params(torch, self)

            def forward(self, *args):
                return forward(self, torch, *args)
        torch.manual_seed(0)
        return Pattern().eval()
    return build


def _topk_sampling(self, torch, logits, noise):
    # temperature, softmax, top-k, renormalise, Gumbel-max sample (noise is an input, so runs are deterministic)
    probs = torch.softmax(logits / 0.8, dim=-1)
    vals, idx = torch.topk(probs, 50, dim=-1)
    vals = vals / vals.sum(-1, keepdim=True)
    pick = torch.argmax(torch.log(vals) - torch.log(-torch.log(noise)), dim=-1, keepdim=True)
    return vals, idx, torch.gather(idx, -1, pick)


def _scatter_gather(self, torch, x, idx):
    g = torch.gather(x, 1, idx)
    s = torch.zeros(x.shape[0], 64, dtype=x.dtype, device=x.device).scatter_add(1, idx % 64, g)
    return g, s, torch.zeros_like(x).scatter(1, idx, g * 2)


def _rope_params(torch, self):
    # Meta's reference Llama RoPE: freqs_cis as a complex64 buffer (torch.polar of unit magnitudes)
    freqs = 1.0 / (10000 ** (torch.arange(0, 64, 2)[:32].float() / 64))
    freqs = torch.outer(torch.arange(128).float(), freqs)
    self.register_buffer("freqs_cis", torch.polar(torch.ones_like(freqs), freqs))


def _complex_rope(self, torch, xq):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    fc = self.freqs_cis[: xq.shape[1]].view(1, xq.shape[1], 1, xq_.shape[-1])
    return torch.view_as_real(xq_ * fc).flatten(3).type_as(xq)


def _stft_params(torch, self):
    self.register_buffer("window", torch.hann_window(400))


def _spectrogram(self, torch, audio):
    # Whisper's log-mel front end before the mel matrix: |STFT|^2 with a Hann window (n_fft 400, hop 160)
    return torch.stft(audio, n_fft=400, hop_length=160, window=self.window, return_complex=True).abs() ** 2


def _embedding_bag_params(torch, self):
    self.bag = torch.nn.EmbeddingBag(4096, 128, mode="sum")


def _masked_fill(self, torch, scores):
    t = scores.shape[-1]
    mask = torch.ones(t, t, dtype=torch.bool, device=scores.device).triu(1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def _index_put(self, torch, x, idx, v):
    return x.index_put((idx,), v), x.index_put((idx % 16,), v, accumulate=True)


def _small_cnn_params(torch, self):
    nn = torch.nn
    self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def _mlp_params(torch, self):
    nn = torch.nn
    self.net = nn.Sequential(nn.LayerNorm(256), nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))


def _sdpa(self, torch, q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def _moe_params(torch, self):
    g = torch.Generator().manual_seed(0)
    self.w_up = torch.nn.Parameter(torch.randn(8, 128, 256, generator=g) / 128 ** 0.5)
    self.w_down = torch.nn.Parameter(torch.randn(8, 256, 128, generator=g) / 256 ** 0.5)


def _moe_experts(self, torch, x, logits):
    # transformers' grouped-GEMM experts: top-2 of 8 experts, the (token, expert) pairs sorted by expert, the group
    # offsets from histc + cumsum, two grouped GEMMs, the weighted rows added back per token. The router logits are
    # an input (distinct integers): eager and the package route alike.
    weights, idx = torch.topk(torch.softmax(logits.float(), -1), 2, dim=-1)
    ids, perm = torch.sort(idx.reshape(-1))
    counts = torch.histc(ids.int() if ids.is_cuda else ids.float(), bins=8, min=0, max=7)  # as transformers does
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    h = torch.nn.functional.silu(torch._grouped_mm(x[perm // 2], self.w_up, offs=offs))
    y = torch._grouped_mm(h, self.w_down, offs=offs) * weights.reshape(-1)[perm, None].to(x.dtype)
    return torch.zeros_like(x).index_add(0, perm // 2, y)


def _unique_floats(torch, *shape):
    n = 1
    for d in shape:
        n *= d
    return (torch.randperm(n, generator=_gen(torch)).float() / n).reshape(shape)


def _patterns() -> list:
    E = Entry  # noqa: N806
    return [
        E("pat_topk_sampling", "pattern", _pattern(_topk_sampling),
          lambda t: (torch_randn(t, 2, VOCAB), torch_rand(t, 2, 50, lo=1e-4)), f"logits [2,{VOCAB}] + noise [2,50]",
          bf16=False, note="softmax, top-k 50, renormalise, Gumbel-max sample"),
        E("pat_scatter_gather", "pattern", _pattern(_scatter_gather),
          lambda t: (torch_randn(t, 4, 1024), t.randint(0, 1024, (4, 256), generator=_gen(t))), "x [4,1024], idx [4,256]",
          note="gather, scatter_add, scatter"),
        E("pat_embedding_bag", "pattern", _pattern(lambda s, t, ids, off: s.bag(ids, off), _embedding_bag_params),
          lambda t: (t.randint(0, 4096, (256,), generator=_gen(t)), t.arange(0, 256, 16)), "ids [256], offsets [16]",
          bf16=False, note="nn.EmbeddingBag(4096, 128, mode='sum')"),
        E("pat_masked_fill", "pattern", _pattern(_masked_fill), lambda t: (torch_randn(t, 2, 4, 128, 128),),
          "scores [2,4,128,128]", note="causal masked_fill(-inf) + softmax"),
        E("pat_sort", "pattern", _pattern(lambda s, t, x: t.sort(x, dim=-1, descending=True)),
          lambda t: (_unique_floats(t, 4, 2048),), "x [4,2048] (distinct values)", bf16=False),
        E("pat_argsort", "pattern", _pattern(lambda s, t, x: t.argsort(x, dim=-1)),
          lambda t: (_unique_floats(t, 4, 2048),), "x [4,2048] (distinct values)", bf16=False),
        E("pat_cumsum", "pattern", _pattern(lambda s, t, x: (t.cumsum(x, dim=-1), t.cumprod(1 + x * 1e-3, dim=-1))),
          lambda t: (torch_randn(t, 4, 4096),), "x [4,4096]", tol=(1e-2, 1e-3), note="cumsum + cumprod"),
        E("pat_index_put", "pattern", _pattern(_index_put),
          lambda t: (torch_randn(t, 1024, 64), t.randperm(1024, generator=_gen(t))[:128], torch_randn(t, 128, 64)),
          "x [1024,64], idx [128] (distinct), v [128,64]", note="index_put and index_put(accumulate=True)"),
        E("pat_index_select", "pattern", _pattern(lambda s, t, x, i: (x.index_select(0, i), x[i, :32])),
          lambda t: (torch_randn(t, 1024, 64), t.randint(0, 1024, (256,), generator=_gen(t))), "x [1024,64], idx [256]"),
        E("pat_small_cnn", "pattern", _pattern(lambda s, t, x: s.body(x), _small_cnn_params), _image(2, 3, 64),
          "x [2,3,64,64]", note="conv-BN-ReLU-pool x2, linear"),
        E("pat_mlp", "pattern", _pattern(lambda s, t, x: s.net(x), _mlp_params), lambda t: (torch_randn(t, 2, 128, 256),),
          "x [2,128,256]", note="LayerNorm, Linear, GELU, Linear"),
        E("pat_sdpa_causal", "pattern", _pattern(_sdpa),
          lambda t: tuple(torch_randn(t, 2, 4, 128, 64, seed=i) for i in range(3)), "q,k,v [2,4,128,64]"),
        E("pat_interpolate", "pattern",
          _pattern(lambda s, t, x: (t.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
                                    t.nn.functional.interpolate(x, scale_factor=2, mode="nearest"))),
          _image(1, 8, 56), "x [1,8,56,56]", note="bilinear + nearest x2 upsample"),
        E("pat_grid_sample", "pattern",
          _pattern(lambda s, t, x, g: t.nn.functional.grid_sample(x, g, align_corners=False)),
          lambda t: (torch_randn(t, 1, 8, 32, 32), torch_rand(t, 1, 32, 32, 2, lo=-1.0)), "x [1,8,32,32], grid [1,32,32,2]"),
        E("pat_maxpool_indices", "pattern",
          _pattern(lambda s, t, x: t.nn.functional.max_pool2d(x, 2, return_indices=True)),
          lambda t: (_unique_floats(t, 1, 8, 64, 64),), "x [1,8,64,64] (distinct values)", bf16=False),
        E("pat_bucketize", "pattern",
          _pattern(lambda s, t, x, b: (t.bucketize(x, b), t.searchsorted(b, x))),
          lambda t: (torch_randn(t, 4, 1024), t.linspace(-3, 3, 63)), "x [4,1024], boundaries [63]", bf16=False),
        E("pat_rfft", "pattern", _pattern(lambda s, t, x: t.view_as_real(t.fft.rfft(x, dim=-1))),
          lambda t: (torch_randn(t, 4, 1024),), "x [4,1024]", bf16=False, tol=(1e-2, 1e-3), note="torch.fft.rfft"),
        E("pat_complex_rope", "pattern", _pattern(_complex_rope, _rope_params),
          lambda t: (torch_randn(t, 2, 16, 4, 64),), "xq [2,16,4,64]", bf16=False,
          note="Meta-style complex RoPE: view_as_complex, complex mul, view_as_real"),
        E("pat_spectrogram", "pattern", _pattern(_spectrogram, _stft_params),
          lambda t: (torch_randn(t, 2, 16000),), "audio [2,16000]", bf16=False, tol=(1e-2, 1e-3),
          note="|torch.stft|^2, Hann window (Whisper's front end)"),
        E("pat_where_clamp", "pattern",
          _pattern(lambda s, t, x: (t.where(x > 0, x, x * 0.1).clamp(-1, 1), t.amax(x, -1), t.logsumexp(x, -1))),
          lambda t: (torch_randn(t, 8, 4096),), "x [8,4096]", note="where, clamp, amax, logsumexp"),
        E("pat_moe_experts", "pattern", _pattern(_moe_experts, _moe_params),
          lambda t: (torch_randn(t, 64, 128), (t.randperm(512, generator=_gen(t)) - 256).float().reshape(64, 8)),
          "x [64,128], router logits [64,8]", fp32=False,
          note="top-2 of 8 experts: topk, sort, histc, cumsum, grouped GEMMs (bfloat16 only, as aten._grouped_mm)"),
    ]


def torch_randn(torch, *shape, seed: int = 0):
    return torch.randn(*shape, generator=_gen(torch, seed))


def torch_rand(torch, *shape, lo: float = 0.0, seed: int = 1):
    return lo + (1.0 - lo) * torch.rand(*shape, generator=_gen(torch, seed))


def _registry() -> list:
    E = Entry  # noqa: N806
    img = _image()
    img_desc = f"image [1,3,{IMG},{IMG}]"
    tv = [
        E("resnet18", "torchvision", _tv("resnet18"), img, img_desc),
        E("resnet50", "torchvision", _tv("resnet50"), img, img_desc),
        E("mobilenet_v2", "torchvision", _tv("mobilenet_v2"), img, img_desc),
        E("mobilenet_v3_small", "torchvision", _tv("mobilenet_v3_small"), img, img_desc),
        E("mobilenet_v3_large", "torchvision", _tv("mobilenet_v3_large"), img, img_desc),
        E("efficientnet_b0", "torchvision", _tv("efficientnet_b0"), img, img_desc),
        E("convnext_tiny", "torchvision", _tv("convnext_tiny"), img, img_desc),
        E("vit_b_16", "torchvision", _tv("vit_b_16"), img, img_desc),
        E("swin_t", "torchvision", _tv("swin_t"), img, img_desc),
        E("regnet_y_400mf", "torchvision", _tv("regnet_y_400mf"), img, img_desc),
        E("densenet121", "torchvision", _tv("densenet121"), img, img_desc),
        E("squeezenet1_1", "torchvision", _tv("squeezenet1_1"), img, img_desc),
        E("shufflenet_v2_x1_0", "torchvision", _tv("shufflenet_v2_x1_0"), img, img_desc),
        E("mnasnet0_5", "torchvision", _tv("mnasnet0_5"), img, img_desc),
        E("r3d_18", "torchvision", _tv("r3d_18"), lambda t: (torch_randn(t, 1, 3, 8, 112, 112),),
          "video [1,3,8,112,112]", note="3D convolutions"),
        E("fcn_resnet50", "torchvision", _tv("fcn_resnet50", lambda m, x: m(x)["out"], weights_backbone=None,
                                             aux_loss=False),
          _image(1, 3, 160), "image [1,3,160,160]", note="segmentation"),
        E("deeplabv3_mobilenet_v3", "torchvision",
          _tv("deeplabv3_mobilenet_v3_large", lambda m, x: m(x)["out"], weights_backbone=None, aux_loss=False),
          _image(1, 3, 160), "image [1,3,160,160]", note="segmentation, small backbone"),
        E("lraspp_mobilenet_v3", "torchvision",
          _tv("lraspp_mobilenet_v3_large", lambda m, x: m(x)["out"], weights_backbone=None),
          _image(1, 3, 160), "image [1,3,160,160]", note="segmentation, small backbone"),
        E("fasterrcnn_mobilenet_v3_320", "torchvision",
          _tv("fasterrcnn_mobilenet_v3_large_320_fpn", lambda m, x: tuple(m([x])[0][k] for k in ("boxes", "scores")),
              weights_backbone=None, num_classes=91),
          lambda t: (torch_rand(t, 3, 320, 320),), "image [3,320,320]", bf16=False,
          note="detection (data-dependent box counts: torch.export is expected to fail)"),
    ]
    timm = [
        E("timm_vit_tiny", "timm", _timm("vit_tiny_patch16_224"), img, img_desc),
        E("timm_convnext_atto", "timm", _timm("convnext_atto"), img, img_desc),
        E("timm_efficientnet_b0", "timm", _timm("efficientnet_b0"), img, img_desc),
        E("timm_resnet26d", "timm", _timm("resnet26d"), img, img_desc),
        E("timm_mobilevit_xxs", "timm", _timm("mobilevit_xxs"), _image(1, 3, 256), "image [1,3,256,256]"),
        E("timm_levit_128s", "timm", _timm("levit_128s"), img, img_desc),
    ]
    ids, ids_desc = _ids(), f"input_ids [1,{SEQ}]"
    dec = dict(_SMALL_DEC)
    hf = [
        E("hf_bert", "transformers", _hf("BertModel", "BertConfig", _SMALL_ENC, _enc), ids, ids_desc),
        E("hf_distilbert", "transformers",
          _hf("DistilBertModel", "DistilBertConfig", dict(dim=256, n_layers=4, n_heads=4, hidden_dim=1024,
                                                          vocab_size=VOCAB), _enc), ids, ids_desc),
        E("hf_roberta", "transformers", _hf("RobertaModel", "RobertaConfig", _SMALL_ENC, _enc), ids, ids_desc),
        E("hf_electra", "transformers",
          _hf("ElectraModel", "ElectraConfig", dict(_SMALL_ENC, embedding_size=128), _enc), ids, ids_desc),
        E("hf_gpt2", "transformers",
          _hf("GPT2LMHeadModel", "GPT2Config", dict(n_layer=4, n_embd=256, n_head=4, vocab_size=VOCAB,
                                                    n_positions=256), _lm), ids, ids_desc),
        E("hf_llama", "transformers", _hf("LlamaForCausalLM", "LlamaConfig", dec, _lm), ids, ids_desc,
          note="GQA 4/2 heads, RoPE, RMSNorm, SwiGLU"),
        E("hf_qwen3", "transformers",
          _hf("Qwen3ForCausalLM", "Qwen3Config", dict(dec, head_dim=64), _lm), ids, ids_desc,
          note="Qwen3: q/k RMSNorm"),
        E("hf_mistral", "transformers",
          _hf("MistralForCausalLM", "MistralConfig", dict(dec, sliding_window=32), _lm), ids, ids_desc,
          note="sliding window 32"),
        E("hf_t5_encoder", "transformers",
          _hf("T5EncoderModel", "T5Config", dict(d_model=256, d_ff=1024, num_layers=4, num_heads=4, d_kv=64,
                                                 vocab_size=VOCAB), _enc), ids, ids_desc),
        E("hf_bart", "transformers",
          _hf("BartModel", "BartConfig", dict(d_model=256, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                              decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024,
                                              vocab_size=VOCAB, max_position_embeddings=256),
              lambda m, i: m(input_ids=i, use_cache=False).last_hidden_state), ids, ids_desc,
          note="encoder-decoder (decoder inputs: shifted input_ids)"),
        E("hf_whisper_encoder", "transformers",
          _hf("WhisperModel", "WhisperConfig", dict(d_model=256, encoder_layers=2, decoder_layers=2,
                                                    encoder_attention_heads=4, decoder_attention_heads=4,
                                                    encoder_ffn_dim=1024, decoder_ffn_dim=1024, num_mel_bins=80,
                                                    max_source_positions=64, vocab_size=VOCAB, pad_token_id=0,
                                                    bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
              lambda m, x: m(input_features=x).last_hidden_state, model_from=lambda m: m.get_encoder()),
          lambda t: (torch_randn(t, 1, 80, 128),), "input_features [1,80,128]"),
        E("hf_wav2vec2", "transformers",
          _hf("Wav2Vec2Model", "Wav2Vec2Config", dict(_SMALL_ENC, conv_dim=(64,) * 7, num_feat_extract_layers=7,
                                                      do_stable_layer_norm=True, feat_extract_norm="layer",
                                                      mask_time_prob=0.0),
              lambda m, x: m(input_values=x).last_hidden_state),
          lambda t: (torch_randn(t, 1, 16000),), "audio [1,16000]", note="conv feature encoder + transformer"),
        E("hf_clip_vision", "transformers", _hf("CLIPVisionModel", "CLIPVisionConfig", _SMALL_VIS, _pix), img,
          img_desc),
        E("hf_siglip_vision", "transformers", _hf("SiglipVisionModel", "SiglipVisionConfig", _SMALL_VIS, _pix), img,
          img_desc),
        E("hf_vit", "transformers", _hf("ViTModel", "ViTConfig", _SMALL_VIS, _pix), img, img_desc),
        E("hf_vit_mae", "transformers",
          _hf("ViTMAEModel", "ViTMAEConfig", _SMALL_VIS, lambda m, x, n: m(pixel_values=x, noise=n).last_hidden_state),
          lambda t: (torch_randn(t, 1, 3, IMG, IMG), torch_rand(t, 1, (IMG // 16) ** 2)),
          f"image [1,3,{IMG},{IMG}] + noise [1,{(IMG // 16) ** 2}]", note="random masking 75% (noise is an input)"),
        E("hf_convnext", "transformers",
          _hf("ConvNextModel", "ConvNextConfig", dict(hidden_sizes=[48, 96, 192, 384], depths=[2, 2, 2, 2]),
              lambda m, x: m(pixel_values=x).pooler_output), img, img_desc),
        E("hf_mixtral", "transformers",
          _hf("MixtralForCausalLM", "MixtralConfig", dict(dec, num_local_experts=4, num_experts_per_tok=2), _lm),
          ids, ids_desc, note="mixture of experts, top-2 routing of 4"),
        E("hf_fnet", "transformers",
          _hf("FNetModel", "FNetConfig", dict(hidden_size=256, num_hidden_layers=4, intermediate_size=1024,
                                              vocab_size=VOCAB, max_position_embeddings=512,
                                              use_tpu_fourier_optimizations=False), _enc), ids, ids_desc,
          bf16=False, note="Fourier token mixing: fft2 of the hidden states (cuFFT), .real"),
    ]
    return tv + timm + hf + _patterns()


REGISTRY = _registry()


def by_name() -> dict:
    return {e.name: e for e in REGISTRY}


def select(entries: list, models: tuple, quick: bool) -> list:
    """The entries --models names (exact names, name prefixes or sources), in registry order; --quick keeps the
    QUICK subset of those. ValueError for an item that matches nothing."""
    out = list(entries)
    if models:
        unknown = [m for m in models if not any(e.name == m or e.name.startswith(m) or e.source == m for e in entries)]
        if unknown:
            raise ValueError(f"no model matches {unknown}; --list prints the zoo")
        out = [e for e in entries if any(e.name == m or e.name.startswith(m) or e.source == m for m in models)]
    if quick:
        out = [e for e in out if e.name in QUICK]
    return out


def row_keys(entries: list, dtype: str, spec: str = "quick") -> list:
    """(key, entry, dtype) for each row: fp32 rows are keyed by the name, bf16 rows by name@bf16 (the bf16 subset);
    with spec default or both, the DEFAULT_SPEC entries get rows keyed <that>+default (lowered with the default
    options), after the quick rows."""
    rows, default = [], []
    for e in entries:
        for key, d in ((e.name, "fp32"), (f"{e.name}@bf16", "bf16")):
            if dtype not in (d, "both") or (d == "bf16" and not e.bf16) or (d == "fp32" and not e.fp32):
                continue
            if spec in ("quick", "both"):
                rows.append((key, e, d))
            if spec in ("default", "both") and e.name in DEFAULT_SPEC:
                default.append((f"{key}+default", e, d))
    return rows + default


def parse_key(key: str) -> tuple:
    """(name, dtype) of a row key (name[@bf16][+default])."""
    name, _, dt = key.partition("+")[0].partition("@")
    return name, dt or "fp32"


def spec_of(key: str) -> str:
    """The compile spec of a row key: default for keys ending in +default, else quick."""
    return "default" if key.endswith("+default") else "quick"


def list_text(entries: list) -> str:
    lines = [f"{len(entries)} models ({', '.join(f'{s}: {n}' for s, n in collections.Counter(e.source for e in entries).items())})"]
    for e in entries:
        only = "" if e.bf16 and e.fp32 else "  (fp32 only)" if e.fp32 else "  (bf16 only)"
        lines.append(f"  {e.name:30s} {e.source:13s} {e.shape}{only}"
                     f"{'  -- ' + e.note if e.note else ''}")
    return "\n".join(lines)


# ============================================================================================ flags

def parse_args(argv: list | None = None):
    f = Flags("benchmarks/zoo.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(HERE, "results", "zoo.json"), "zoo.json path, or a directory for zoo.json/.md")
    f.define("models", (), "comma-separated model names, name prefixes (hf_, pat_, timm_) or sources "
             "(torchvision, timm, transformers, pattern); default all", csv, "list")
    f.boolean("list", False, "print the zoo (name, source, inputs) and exit")
    f.define("workers", 4, "child processes for the build/export/lower stages", positive_int, "integer")
    f.define("timeout-s", 240.0, "per-model limit of each child process's stages (s)", positive_float, "float")
    f.boolean("quick", False, f"only the {len(QUICK)}-model subset {','.join(QUICK)} (of those --models selects)")
    f.enum("dtype", "fp32", DTYPES, "fp32 (default), bf16 (the bf16 subset) or both")
    f.enum("spec", "quick", SPECS, "quick (default: every row lowered with max_autotune OFF), default (only the "
           f"{len(DEFAULT_SPEC)}-model DEFAULT_SPEC subset, lowered with aotirt's default options) or both")
    f.define("replays", 30, "CUDA graph replays timed per model (median)", positive_int, "integer")
    f.enum("attention_backend", "DEFAULT", ("DEFAULT", "MATH", "CUDNN", "TRITON", "CUDNN,TRITON"),
           "how the packages lower SDPA (aotirt's attention_backend; DEFAULT: the platform's, CUDNN,TRITON on Linux "
           "CUDA; CUDNN alone is refused at lowering for SDPA calls the cuDNN shims cannot run, e.g. float32)")
    f.define("budget-s", 0.0, "end the whole zoo after this many seconds, recording what did not finish (0: no "
             "limit); the JSON and table are written either way", nonnegative_float, "float")
    f.boolean("export-only", False, "build + torch.export only, on the CPU (no GPU needed; no lower/run/time)")
    f.define("merge", (), "comma-separated zoo.json files to merge into --out (later files win per row; nothing is "
             "run): for a zoo split over several GPU calls (--models torchvision,timm / transformers,pattern)",
             csv, "list")
    f.string("work", "", "folder for the packages (default: a temporary one, removed at the end)")
    f.enum("child", None, ("lower", "run"), "(internal) child role")
    f.string("keys", "", "(internal) the child's rows (name or name@bf16, comma-separated)")
    return f.parse(argv)


def out_paths(out: str) -> dict:
    base = out[:-5] if out.endswith(".json") else os.path.join(out, "zoo")
    return {"json": base + ".json", "md": base + ".md"}


# ============================================================================================ records and summary

def new_record(key: str, e: Entry, dtype: str) -> dict:
    return {"key": key, "name": e.name, "source": e.source, "dtype": dtype, "spec": spec_of(key), "inputs": e.shape,
            "note": e.note,
            "stage": "build", "skipped": "", "exported": False, "lowered": False, "refused_missing_shims": [],
            "ran": False, "correct": None, "max_abs_err": None, "tol": None, "ms_ours": None, "ours_graph": None,
            "ms_eager_graph": None, "eager_graph": None, "ms_eager": None, "export_s": None, "compile_s": None,
            "error": "", "error_stage": ""}


def fail(rec: dict, stage: str, e: BaseException | str) -> dict:
    text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
    rec["error"], rec["error_stage"] = " ".join(str(text).split())[:1500], stage
    return rec


def status(r: dict) -> str:
    """One word for where the model stopped."""
    if r.get("skipped"):
        return "skipped"
    if r.get("refused_missing_shims"):
        return "refused"
    if r.get("error") and not r.get("ran"):
        return f"{r.get('error_stage') or r.get('stage')} failed"
    if r.get("ran"):
        return "ok" if r.get("correct") else "wrong"
    if r.get("exported") and not r.get("lowered"):
        return "exported"
    return r.get("stage") or "?"


def summarize(records: list) -> dict:
    """Counts at each stage and the missing shims ranked by how many models need them."""
    n = len(records)
    built = [r for r in records if not r.get("skipped")]
    counts = {
        "models": n, "skipped": n - len(built), "built": len(built),
        "exported": sum(bool(r.get("exported")) for r in records),
        "export_failed": sum(1 for r in built if not r.get("exported")),
        "lowered": sum(bool(r.get("lowered")) for r in records),
        "refused": sum(bool(r.get("refused_missing_shims")) for r in records),
        "lower_failed": sum(1 for r in records if r.get("exported") and not r.get("lowered")
                            and not r.get("refused_missing_shims") and r.get("error_stage") == "lower"),
        "ran": sum(bool(r.get("ran")) for r in records),
        "correct": sum(r.get("correct") is True for r in records),
        "wrong": sum(r.get("ran") and r.get("correct") is False for r in records),
        "timed": sum(r.get("ms_ours") is not None for r in records),
    }
    need = collections.defaultdict(list)
    for r in records:
        for s in r.get("refused_missing_shims") or []:
            need[s].append(r["key"])
    ranking = [{"shim": s, "models": len(ms), "which": sorted(ms)}
               for s, ms in sorted(need.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    ratios = [r["ms_ours"] / r["ms_eager_graph"] for r in records
              if r.get("ms_ours") and r.get("ms_eager_graph") and r.get("correct")]
    geo = None
    if ratios:
        import math
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    return {"counts": counts, "missing_shims": ranking, "geomean_ours_over_eager_graph": geo,
            "refused_only_by": {s["shim"]: s["which"] for s in ranking}}


def _f(x, digits=3) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.2e}" if (x != 0 and abs(x) < 1e-2) else f"{x:.{digits}f}"
    return str(x)


def _yn(x) -> str:
    return "✓" if x is True else ("✗" if x is False else "—")


def markdown(result: dict) -> str:
    """The zoo's table (and the summary and missing-shim ranking) for benchmarks/RESULTS.md."""
    m = result.get("machine") or {}
    s = result.get("summary") or summarize(result.get("records", []))
    c = s["counts"]
    head = (f"Zoo (`benchmarks/zoo.py`{' --export-only: build + export stages only' if result.get('export_only') else ''}), "
            f"{m.get('gpu', 'CPU')}, "
            f"torch {result.get('torch') or '?'}, torchvision {result.get('torchvision') or '—'}, timm "
            f"{result.get('timm') or '—'}, transformers {result.get('transformers') or '—'}, commit "
            f"`{result.get('commit') or '?'}`; random weights, max_autotune OFF (rows marked +default: aotirt's "
            f"default options, max_autotune ON), {result.get('replays', '?')} CUDA "
            f"graph replays per model (median ms). Tolerance: |ours - eager| <= atol + rtol * max|eager| "
            f"(fp32 {TOL['fp32']}, bf16 {TOL['bf16']}).")
    counts = (f"**{c['models']} rows**: {c['skipped']} skipped, {c['exported']} exported, {c['lowered']} lowered, "
              f"{c['refused']} refused (missing shims), {c['lower_failed']} other lowering errors, {c['ran']} ran, "
              f"{c['correct']} correct, {c['wrong']} wrong"
              + (f"; geomean ours / eager CUDA graph over the correct ones: "
                 f"{s['geomean_ours_over_eager_graph']:.2f}×" if s.get("geomean_ours_over_eager_graph") else "") + ".")
    lines = [head, "", counts, "",
             "| model | source | dtype | status | export | lower | run | correct | max abs err | ours ms | "
             "eager graph ms | ours/eager | notes |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result.get("records", []):
        notes = []
        if r.get("skipped"):
            notes.append(f"skipped: {r['skipped']}")
        if r.get("refused_missing_shims"):
            notes.append(f"refused: missing shims [{', '.join(r['refused_missing_shims'])}]")
        elif r.get("error"):
            notes.append(f"{r.get('error_stage')}: {r['error'][:160]}")
        if r.get("commit") and result.get("commit") and r["commit"] != result["commit"]:
            notes.append(f"from commit {r['commit'][:7]}")
        if r.get("timing_note"):
            notes.append(r["timing_note"])
        if r.get("ran") and r.get("ours_graph") is False:
            notes.append("ours: no CUDA graph (plain calls)")
        if r.get("ran") and r.get("eager_graph") is False:
            notes.append("eager: no CUDA graph (plain calls)")
        ratio = (r["ms_ours"] / r["ms_eager_graph"]) if r.get("ms_ours") and r.get("ms_eager_graph") else None
        note = "; ".join(notes).replace("|", "/").replace("\n", " ")
        model = r["name"] + ("+default" if r.get("spec") == "default" else "")
        lines.append(f"| {model} | {r['source']} | {r['dtype']} | {status(r)} | "
                     f"{_yn(r.get('exported') if not r.get('skipped') else None)} | "
                     f"{_yn(r.get('lowered') if r.get('exported') and not result.get('export_only') else None)} | "
                     f"{_yn(r.get('ran') if r.get('lowered') else None)} | {_yn(r.get('correct'))} | "
                     f"{_f(r.get('max_abs_err'))} | {_f(r.get('ms_ours'))} | {_f(r.get('ms_eager_graph'))} | "
                     f"{'—' if ratio is None else f'{ratio:.2f}×'} | {note} |")
    lines += ["", "Missing shims, by how many models need them:", ""]
    if s["missing_shims"]:
        lines += ["| shim | models | which |", "|---|---|---|"]
        lines += [f"| `{x['shim']}` | {x['models']} | {', '.join(x['which'])} |" for x in s["missing_shims"]]
    else:
        lines.append("(none: no model was refused for missing shims)")
    return "\n".join(lines) + "\n"


# ============================================================================================ stages (torch needed)

def cast_inputs(torch, inputs: tuple, dtype, device: str) -> tuple:
    return tuple((x.to(device=device, dtype=dtype) if x.is_floating_point() else x.to(device)) for x in inputs)


def torch_dtype(torch, dtype: str):
    return {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]


def build_entry(torch, e: Entry, dtype: str, device: str) -> tuple:
    """(model, inputs) on `device` in `dtype`, seeded: the lower and run children build the same weights."""
    torch.manual_seed(0)
    model = e.build(torch)
    model = model.eval().to(device=device, dtype=torch_dtype(torch, dtype))
    return model, cast_inputs(torch, e.inputs(torch), torch_dtype(torch, dtype), device)


def compile_options(spec: str = "quick", attention_backend: str = "DEFAULT") -> dict:
    """aotirt.CompileOptions' arguments for a row: quick = max_autotune OFF, default = aotirt's defaults."""
    opts = {} if spec == "default" else {"max_autotune": False}
    if attention_backend != "DEFAULT":
        opts["attention_backend"] = attention_backend
    return opts


def default_compile(ep, inputs, package_path, attention_backend: str = "DEFAULT", spec: str = "quick"):
    import aotirt
    return aotirt.compile(ep, inputs, package_path,
                          options=aotirt.CompileOptions(**compile_options(spec, attention_backend)))


def lower_one(key: str, e: Entry, dtype: str, work: str, device: str = "cuda", export_only: bool = False,
              compile_fn: Callable | None = None, progress: Callable[[dict], None] | None = None,
              attention_backend: str = "DEFAULT") -> dict:
    """The build, export and lower stages of one row, in this process. compile_fn(ep, inputs, package_path) defaults
    to aotirt.compile with the key's spec (spec_of: max_autotune OFF, or the default options for +default keys) and
    `attention_backend` (the CPU test passes a fake). progress(rec) after each stage."""
    import torch
    from aotirt.errors import UnsupportedShimError
    rec = new_record(key, e, dtype)
    progress = progress or (lambda r: None)
    progress(rec)
    try:
        model, inputs = build_entry(torch, e, dtype, device)
    except Exception as ex:  # noqa: BLE001 (any builder failure: the model is skipped, with why)
        rec["skipped"] = f"{type(ex).__name__}: {' '.join(str(ex).split())[:400]}"
        return rec
    rec["stage"] = "export"
    progress(rec)
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            ep = torch.export.export(model, inputs)
        rec["exported"], rec["export_s"] = True, round(time.perf_counter() - t0, 2)
    except Exception as ex:  # noqa: BLE001
        return fail(rec, "export", ex)
    if export_only:  # the CPU check that export kept the model's meaning: the exported program against eager
        rec["stage"] = "exported"
        try:
            with torch.no_grad():
                ok, err, detail = compare(torch, flat_tensors(torch, ep.module()(*inputs)),
                                          flat_tensors(torch, model(*inputs)), dtype, e.tol)
            rec["export_matches_eager"], rec["export_max_abs_err"] = ok, err
            if detail:
                rec["mismatch"] = detail
        except Exception as ex:  # noqa: BLE001
            rec["export_check_error"] = f"{type(ex).__name__}: {str(ex)[:300]}"
        return rec
    rec["stage"] = "lower"
    progress(rec)
    pkg = os.path.join(work, f"{key.replace('@', '_').replace('+', '_')}.pt2")
    t0 = time.perf_counter()
    try:
        path = (compile_fn(ep, inputs, pkg) if compile_fn else
                default_compile(ep, inputs, pkg, attention_backend=attention_backend, spec=spec_of(key)))
        rec["lowered"], rec["package"] = True, path or pkg
    except UnsupportedShimError as ex:
        rec["refused_missing_shims"] = list(ex.shims)
        fail(rec, "lower", f"refused: missing shims [{', '.join(ex.shims)}]")
    except Exception as ex:  # noqa: BLE001
        fail(rec, "lower", ex)
    rec["compile_s"] = round(time.perf_counter() - t0, 1)
    rec["stage"] = "lowered" if rec["lowered"] else "lower"
    return rec


def flat_tensors(torch, out) -> list:
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def compare(torch, got: list, ref: list, dtype: str, tol: tuple | None = None) -> tuple:
    """(correct, max_abs_err, detail): every output within atol + rtol * max|ref| (integer/bool outputs: equal)."""
    atol, rtol = TOL[dtype]
    if tol is not None:
        scale = 1.0 if dtype == "fp32" else TOL["bf16"][0] / TOL["fp32"][0]
        atol, rtol = tol[0] * scale, tol[1] * scale
    if len(got) != len(ref):
        return False, None, f"{len(got)} outputs, eager has {len(ref)}"
    worst, ok, detail = 0.0, True, ""
    for i, (g, r) in enumerate(zip(got, ref)):
        if tuple(g.shape) != tuple(r.shape):
            return False, None, f"output {i}: shape {tuple(g.shape)} != eager {tuple(r.shape)}"
        if r.numel() == 0:
            continue
        if not r.is_floating_point() and not r.is_complex():
            g, r = g.detach(), r.detach()
            bad = int((g.to(r.device) != r).sum())
            err = float((g.to(r.device).double() - r.double()).abs().max())
            worst = max(worst, err)
            if bad:
                ok, detail = False, f"output {i}: {bad} of {r.numel()} integer values differ"
            continue
        g64, r64 = g.detach().to(r.device).double(), r.detach().double()
        finite = torch.isfinite(r64)
        if not bool((torch.isfinite(g64) == finite).all()):
            ok, detail = False, f"output {i}: non-finite values differ"
        err = float((g64 - r64)[finite].abs().max()) if bool(finite.any()) else 0.0
        worst = max(worst, err)
        bound = atol + rtol * (float(r64[finite].abs().max()) if bool(finite.any()) else 0.0)
        if err > bound:
            ok, detail = False, f"output {i}: max abs err {err:.3g} > {bound:.3g}"
    return ok, worst, detail


def replay_ms(torch, fn: Callable, replays: int, device: str = "cuda") -> float:
    """Median ms of `replays` single calls, each between two CUDA events (host clock off the GPU), after WARMUP."""
    import statistics
    for _ in range(WARMUP):
        fn()
    vals = []
    if not device.startswith("cuda"):
        for _ in range(replays):
            t0 = time.perf_counter()
            fn()
            vals.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(vals)
    torch.cuda.synchronize()
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        vals.append(a.elapsed_time(b))
    return statistics.median(vals)


def eager_graphed(torch, model, inputs: tuple) -> Callable:
    static = [x.clone() for x in inputs]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(*static)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        model(*static)

    def replay():
        for s, x in zip(static, inputs):
            s.copy_(x)
        g.replay()
    replay.graph = g
    return replay


def run_one(rec: dict, e: Entry, replays: int, progress: Callable[[dict], None] | None = None,
            device: str = "cuda", load: Callable | None = None, capture: Callable | None = None) -> dict:
    """The run and time stages of a lowered row (rec from lower_one, with its package), in this process.
    load(package) -> a Runner and capture(runner, *inputs) -> a CapturedRunner default to aotirt.load/aotirt.capture
    (the CPU test passes fakes, with device="cpu")."""
    import torch
    import aotirt
    load, capture = load or aotirt.load, capture or aotirt.capture
    progress = progress or (lambda r: None)
    cuda = device.startswith("cuda")
    rec["stage"] = "run"
    progress(rec)
    try:
        model, inputs = build_entry(torch, e, rec["dtype"], device)
        with torch.no_grad():
            ref = flat_tensors(torch, model(*inputs))
        runner = load(rec["package"])
        got = runner.run_list(list(inputs), output="torch")
        if cuda:
            torch.cuda.synchronize()
        rec["ran"] = True
    except Exception as ex:  # noqa: BLE001
        return fail(rec, "run", ex)
    ok, err, detail = compare(torch, got, ref, rec["dtype"], e.tol)
    rec["correct"], rec["max_abs_err"] = ok, err
    rec["tol"] = list(e.tol or TOL[rec["dtype"]])
    if detail:
        rec["mismatch"] = detail
    del got, ref
    rec["stage"] = "time"
    progress(rec)
    try:
        try:
            graphed = capture(runner, *inputs)
            rec["ms_ours"] = replay_ms(torch, lambda: graphed.run_list(list(inputs)), replays, device)
            rec["ours_graph"] = True
        except aotirt.RunError as ex:  # not capturable: plain calls, said so
            rec["ours_graph_error"] = str(ex)[:400]
            rec["ms_ours"] = replay_ms(torch, lambda: runner.run_list(list(inputs)), replays, device)
            rec["ours_graph"] = False
        with torch.no_grad():
            rec["ms_eager"] = replay_ms(torch, lambda: model(*inputs), replays, device)
            try:
                if not cuda:
                    raise RuntimeError("CUDA graphs need a CUDA device")
                fn = eager_graphed(torch, model, inputs)
                rec["ms_eager_graph"], rec["eager_graph"] = replay_ms(torch, fn, replays, device), True
            except Exception as ex:  # noqa: BLE001 (not capturable: plain calls, said so)
                rec["eager_graph_error"] = f"{type(ex).__name__}: {str(ex)[:400]}"
                rec["ms_eager_graph"], rec["eager_graph"] = rec["ms_eager"], False
    except Exception as ex:  # noqa: BLE001
        fail(rec, "time", ex)
    rec["stage"] = "done"
    return rec


# ============================================================================================ child processes

def _emit(tag: str, payload) -> None:
    print(f"{tag}: {json.dumps(payload)}", flush=True)


def child_main(a) -> int:
    """Runs the rows in --keys one after the other, printing `start: key`, `progress: rec` and `done: rec` lines."""
    import torch  # (before aotirt.load: outputs as torch tensors)
    # fp32 means fp32: eager's cuDNN convolutions would use TF32 by default; packages compile at "highest".
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    entries = by_name()
    work = a.work or tempfile.gettempdir()
    prior = {}
    if a.child == "run":
        with open(os.path.join(work, "lowered.json")) as f:
            prior = json.load(f)
    for key in csv(a.keys):
        name, dtype = parse_key(key)
        _emit("start", key)
        try:
            if a.child == "lower":
                rec = lower_one(key, entries[name], dtype, work, device="cpu" if a.export_only else "cuda",
                                export_only=a.export_only, progress=lambda r: _emit("progress", r),
                                attention_backend=a.attention_backend)
            else:
                rec = run_one(prior[key], entries[name], a.replays, progress=lambda r: _emit("progress", r))
        except Exception as ex:  # noqa: BLE001 (a harness bug for one model must not end the others)
            rec = fail(prior.get(key) or new_record(key, entries[name], dtype), "harness",
                       f"{type(ex).__name__}: {ex}; {traceback.format_exc()[-600:]}")
        _emit("done", rec)
        if a.child == "run":
            import gc
            gc.collect()
            torch.cuda.empty_cache()
    return 0


def run_children(cmd_for: Callable[[list], list], keys: list, timeout_s: float, base: Callable[[str], dict],
                 env: dict | None = None, tag: str = "", stop_at: float | None = None) -> dict:
    """Runs keys through child processes (cmd_for(keys) -> argv) one after the other; returns {key: record}.
    A key whose child says nothing for timeout_s after its `start:`, or whose child dies, gets the last record the
    child reported for it (else base(key)) with the error; the rest go on in a new child. At stop_at (a
    time.monotonic() value: --budget-s) the child is ended and the keys not done are recorded as not finished."""
    results, todo = {}, list(keys)
    while todo:
        if stop_at is not None and time.monotonic() >= stop_at:
            for k in todo:
                results[k] = fail(base(k), "budget", "not run: --budget-s reached")
            say(f"{tag}--budget-s reached: {len(todo)} row(s) not run ({','.join(todo)})")
            break
        err = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen(cmd_for(todo), stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                             start_new_session=True)
        LIVE.add(p)
        lines: queue.Queue = queue.Queue()

        def pump(proc=p, q=lines):
            for ln in proc.stdout:
                q.put(ln)
            q.put(None)
        threading.Thread(target=pump, daemon=True).start()
        current, last, deadline, problem = None, None, time.monotonic() + timeout_s + 120, ""
        while True:
            until = deadline if stop_at is None else min(deadline, stop_at)
            try:
                ln = lines.get(timeout=max(0.1, until - time.monotonic()))
            except queue.Empty:
                problem = (f"timed out after {timeout_s:.0f} s" if time.monotonic() >= deadline
                           else "not finished: --budget-s reached")
                break
            if ln is None:
                break
            tagname, _, payload = ln.partition(": ")
            if tagname not in ("start", "progress", "done"):
                continue
            try:
                val = json.loads(payload)
            except ValueError:
                continue
            if tagname == "start":
                current, last, deadline = val, None, time.monotonic() + timeout_s
            elif tagname == "progress":
                last = val
            elif tagname == "done":
                results[val["key"]] = val
                say(f"{tag}{val['key']}: {status(val)}"
                    + (f" ({val['error'][:200]})" if val.get("error") else "")
                    + (f" ours {val['ms_ours']:.3f} ms, eager graph {val['ms_eager_graph']:.3f} ms"
                       if val.get("ms_ours") and val.get("ms_eager_graph") else ""))
                current = None
        if problem:
            _kill(p)
        rc = p.wait()
        LIVE.discard(p)
        err.seek(0)
        stderr = err.read()
        err.close()
        todo = [k for k in todo if k not in results]
        if current is not None and current in todo:
            rec = last or base(current)
            stage = rec.get("stage", "?")
            why = (f"{problem} in stage {stage}" if problem else
                   f"child process died (exit {rc}) in stage {stage}: {_last_line(stderr)}")
            fail(rec, stage, why)
            results[current] = rec
            say(f"{tag}{current}: {rec['error'][:300]}")
            todo.remove(current)
        elif todo:  # the child ended before starting a key (a crash at import): the rest get the error
            why = problem or f"child process exited {rc} before running them: {_last_line(stderr)}"
            for k in todo:
                results[k] = fail(base(k), "harness", why)
            say(f"{tag}{','.join(todo)}: {why}\n{stderr[-2000:]}")
            todo = []
    return results


LIVE: set = set()  # the children now running (each in its own session: ended with the parent, see _on_signal)


def _on_signal(signum, frame) -> None:
    """SIGTERM/SIGINT (run.sh's timeout, Ctrl-C): end the children's process groups too, then exit."""
    for p in list(LIVE):
        _kill(p)
    raise SystemExit(128 + signum)


def _kill(p) -> None:
    try:
        os.killpg(p.pid, 9)
    except OSError:
        p.kill()


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][-400:] if lines else ""


# ============================================================================================ parent

def _dist_version(name: str) -> str:
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def detect_gpu() -> dict:
    """{gpu, count} of the CUDA devices torch sees; RuntimeError with the reason where there is none."""
    import torch
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        why = "torch.cuda.is_available() is False"
        if torch.version.cuda is None:
            why += f" (torch {torch.__version__} is a CPU build)"
        raise RuntimeError(why)
    return {"gpu": torch.cuda.get_device_name(0), "count": torch.cuda.device_count(), "cuda": torch.version.cuda}


def merge(files: tuple) -> dict:
    """One result from several zoo.json files: rows in registry order (later files win per key), summary anew."""
    results = []
    for path in files:
        with open(path) as f:
            results.append(json.load(f))
    if not results:
        raise ValueError("nothing to merge")
    recs: dict = {}
    for res in results:
        for r in res.get("records", []):
            recs[r["key"]] = dict(r, commit=r.get("commit") or res.get("commit"))  # each row keeps its run's commit
    order = {e.name: i for i, e in enumerate(REGISTRY)}
    records = sorted(recs.values(), key=lambda r: (order.get(r["name"], len(order)), r["name"], r["dtype"]))
    out = dict(results[-1])
    out.update(records=records, summary=summarize(records), merged_from=[os.path.abspath(p) for p in files],
               export_only=all(r.get("export_only") for r in results),
               elapsed_s={"total": round(sum((r.get("elapsed_s") or {}).get("total", 0) for r in results), 1)})
    return out


def write_result(result: dict, out: str) -> dict:
    paths = out_paths(out)
    os.makedirs(os.path.dirname(os.path.abspath(paths["json"])), exist_ok=True)
    with open(paths["json"], "w") as f:
        json.dump(result, f, indent=1)
    md = markdown(result)
    with open(paths["md"], "w") as f:
        f.write(md)
    print(md)
    return paths


def run(a) -> int:
    t_start = time.perf_counter()
    if a.merge:
        try:
            result = merge(a.merge)
        except (OSError, ValueError, KeyError) as e:
            print(f"zoo: --merge: {e}", file=sys.stderr)
            return 2
        paths = write_result(result, a.out)
        say(f"merged {len(a.merge)} file(s) into {paths['json']} and {paths['md']}")
        return 0
    try:
        entries = select(REGISTRY, a.models, a.quick)
    except ValueError as e:
        print(f"zoo: {e}", file=sys.stderr)
        return 2
    if a.list:
        print(list_text(entries))
        return 0
    if not entries:
        print("zoo: no model selected", file=sys.stderr)
        return 2
    machine = {"gpu": "CPU (export only)"}
    if not a.export_only:
        try:
            machine = detect_gpu()
        except RuntimeError as e:
            print(f"zoo: no GPU here ({e}). The zoo lowers, runs and times each model on a GPU: run it on a GPU "
                  f"machine (BENCHES=benchmarks/zoo.py bash tools/gpu/run.sh bench, or run.sh zoo), or pass "
                  f"--export-only for the build and export stages on the CPU.", file=sys.stderr, flush=True)
            return 1
    rows = row_keys(entries, a.dtype, a.spec)
    keys = [k for k, _, _ in rows]
    base = {k: new_record(k, e, d) for k, e, d in rows}
    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="aotirt_zoo_")
    os.makedirs(work, exist_ok=True)
    say(f"{len(keys)} rows ({a.dtype}, spec {a.spec}) on {machine['gpu']}; {a.workers} lowering workers, {a.timeout_s:.0f} s per "
        f"model; packages in {work}")
    stop_at = time.monotonic() + a.budget_s - 20 if a.budget_s else None  # 20 s to write the results
    if threading.current_thread() is threading.main_thread():
        import signal
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _on_signal)
    me = [sys.executable, os.path.abspath(__file__)]
    common = (["--work", work, "--replays", str(a.replays), "--attention_backend", a.attention_backend] +
              (["--export-only"] if a.export_only else []))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the children import as we do
    try:
        shards = [keys[i::a.workers] for i in range(min(a.workers, len(keys)))]
        lowered: dict = {}
        threads = []
        lock = threading.Lock()

        def lower_shard(shard, i):
            res = run_children(lambda ks: [*me, "--child", "lower", "--keys", ",".join(ks), *common], shard,
                               a.timeout_s, base.__getitem__, env=env, tag=f"[lower {i}] ", stop_at=stop_at)
            with lock:
                lowered.update(res)
        t0 = time.perf_counter()
        for i, shard in enumerate(shards):
            th = threading.Thread(target=lower_shard, args=(shard, i))
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
        lower_s = time.perf_counter() - t0
        say(f"build/export/lower stages done in {lower_s:.0f} s")
        records = {k: lowered.get(k) or fail(base[k], "harness", "no result") for k in keys}
        run_s = 0.0
        to_run = [k for k in keys if records[k].get("lowered")]
        if to_run and not a.export_only:
            with open(os.path.join(work, "lowered.json"), "w") as f:
                json.dump(records, f)
            t0 = time.perf_counter()
            records.update(run_children(lambda ks: [*me, "--child", "run", "--keys", ",".join(ks), *common], to_run,
                                        a.timeout_s, records.__getitem__, env=env, tag="[run] ",
                                        stop_at=stop_at))
            run_s = time.perf_counter() - t0
        recs = [records[k] for k in keys]
        for r in recs:
            r.pop("package", None)
        result = {"benchmark": "zoo", "commit": provenance.commit(), "machine": machine, "torch": _dist_version("torch"),
                  "torchvision": _dist_version("torchvision"), "timm": _dist_version("timm"),
                  "transformers": _dist_version("transformers"), "python": sys.version.split()[0],
                  "command": [sys.executable, *sys.argv], "dtype": a.dtype, "spec": a.spec,
                  "export_only": a.export_only,
                  "attention_backend": a.attention_backend,
                  "replays": a.replays, "workers": a.workers, "timeout_s": a.timeout_s,
                  "elapsed_s": {"lower": round(lower_s, 1), "run": round(run_s, 1),
                                "total": round(time.perf_counter() - t_start, 1)},
                  "summary": summarize(recs), "records": recs}
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    paths = write_result(result, a.out)
    c = result["summary"]["counts"]
    say(f"wrote {paths['json']} and {paths['md']} in {result['elapsed_s']['total']:.0f} s: " +
        ", ".join(f"{k} {v}" for k, v in c.items()))
    return 0


def main(argv: list | None = None) -> int:
    a = parse_args(argv)
    if a.child:
        return child_main(a)
    return run(a)


if __name__ == "__main__":
    import importlib.util
    if importlib.util.find_spec("aotirt") is None:
        sys.path.insert(0, os.path.join(HERE, "..", "python"))
    sys.exit(main())
