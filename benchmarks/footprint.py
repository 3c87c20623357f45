"""Footprint (issue 12): GPU memory and host RSS of one GPT-2-like package on three runners, each in a fresh process.

    python benchmarks/footprint.py [--out DIR|FILE.json] [--iters 20] [--aotirt-run PATH] [--package PKG.pt2]
                                   [--skip ROW,...] [--model gpt2|mlp]

Rows, all on the same package (GPT2LMHeadModel from a GPT2Config: 4 layers, width 512, 8 heads, vocab 8192, 256
positions, bf16, random weights; batch 1 x 128 input_ids; compiled once with aotirt.compile, max_autotune OFF, in a
child process so this one never holds a CUDA context; where GPT-2's export or compile fails, a Linear/GELU stack of
similar size instead, said so in the output):
  aotirt_run        the C++ runner (no Python): `aotirt_run --report-memory --hold`
  aotirt_run_plain  the same with GEMM algorithm tuning and one-call GEMM graphs off (AOTIRT_GEMM_TUNE=0,
                    AOTIRT_GEMM_GRAPHS=0): what those two keep on the GPU
  python_cupy       aotirt.load + run on CuPy inputs; the process asserts "torch" not in sys.modules
  torch_eager       eager PyTorch on the same model (no CUDA graphs anywhere)
  cuda_context      (a) a process that only creates a CUDA context (ctypes: cudaFree(0) on aotirt_run's libcudart)
  cublaslt          (b) context + cuBLASLt: one handle and one small bf16 matmul (ctypes on libcublasLt.so.13)
  weights           (c) the package's weights blob (its size in the .pt2 zip; uploaded by one cudaMalloc)
  aotirt_run_rest   (d) aotirt_run - (b) - (c): kernel images, the runtime's pool and cuBLASLt workspace, ...
Each measured row runs warm-up + --iters runs, then prints VmRSS/VmHWM (/proc/self/status) and cudaMemGetInfo's
total-free and waits on stdin; meanwhile this process reads that process's GPU memory from NVML
(`nvidia-smi --query-compute-apps`), else device-wide memory (nvidia-smi total-free minus the idle baseline taken
with no process, else the child's own cudaMemGetInfo). Each row records which (gpu_method). Writes footprint.json
and footprint.md (the table for benchmarks/RESULTS.md) beside it; progress on stderr. Exits 1 with the reason where
there is no GPU. The parts that need no GPU are tested by tests/cpu/test_footprint_bench.py.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # cliflags.py beside this file (also when loaded by path, as the CPU test does)
from cliflags import Flags, positive_int  # noqa: E402  (absl flags, as the aotirt CLI)
import provenance  # noqa: E402  (beside this file)
KiB, MiB = 1 << 10, 1 << 20
WARMUP = 3
SEQ = 128
GPT2 = dict(n_layer=4, n_embd=512, n_head=8, vocab_size=8192, n_positions=256)
MODELS = ("gpt2", "mlp")
MEASURED = ("aotirt_run", "aotirt_run_plain", "python_cupy", "torch_eager", "cuda_context", "cublaslt")
LABELS = {
    "aotirt_run": "aotirt_run (C++ runner, no Python)",
    "aotirt_run_plain": "aotirt_run, GEMM tuning + GEMM graphs off",
    "python_cupy": "aotirt.load + run, CuPy inputs (no torch in the process)",
    "torch_eager": "eager PyTorch, same model",
    "cuda_context": "(a) bare CUDA context",
    "cublaslt": "(b) context + cuBLASLt (1 handle, 1 small matmul)",
    "weights": "(c) model weights (package's weights blob)",
    "aotirt_run_rest": "(d) rest of aotirt_run (kernels, pools, workspaces)",
}
LT_WORKSPACE_MIB = 32  # the runtime's cuBLASLt workspace per stream on sm90/100/120 (shims/gemm/workspace.cc)
HOLD_TIMEOUT_S = 150   # a child must report within this (the eager one imports torch and transformers)
COMPILE_TIMEOUT_S = 300


def say(msg: str) -> None:
    print(f"[footprint {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================================================ parsing (no GPU needed)

def parse_proc_status(text: str) -> dict:
    """/proc/<pid>/status -> {field: KiB} for its "Name:   123 kB" lines (VmRSS, VmHWM, VmSize, ...)."""
    out = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[key.strip()] = int(parts[0])
    return out


def _number(text: str):
    """An int or float from text, None for what is not a number (or is negative: -1 means 'could not read')."""
    text = text.strip()
    try:
        v = float(text)
    except ValueError:
        return None
    if v != v or v < 0:
        return None
    return int(v) if v.is_integer() and "." not in text else v


def _key_values(line: str, prefix: str, text_keys: tuple = ()) -> dict | None:
    """`<prefix> k=v k=v ...` -> {k: number or None (-1 or unreadable); text for text_keys}; None for other lines."""
    line = line.strip()
    if not line.startswith(prefix):
        return None
    out = {}
    for tok in line[len(prefix):].split():
        k, sep, v = tok.partition("=")
        if sep:
            out[k] = v if k in text_keys else _number(v)
    return out


def parse_memory_line(line: str) -> dict | None:
    """`memory: rss_kib=1 hwm_kib=2 gpu_used_mib=3.5 ...` (aotirt_run --report-memory and the Python children) ->
    {key: number or None (-1 or unreadable)}; None for any other line."""
    return _key_values(line, "memory:")


def parse_stage_line(line: str) -> dict | None:
    """`memory-stage: stage=loaded rss_kib=1 gpu_used_mib=2.5 ...` (aotirt_run --report-memory, one per step before
    its memory line) -> {"stage": name, key: number or None}; None for any other line."""
    out = _key_values(line, "memory-stage:", ("stage",))
    return out if out and out.get("stage") else None


STAGE_LABELS = {"context": "CUDA context (cudaFree(0))", "loaded": "+ Model::Load (wrapper .so, shims, weights)",
                "inputs": "+ inputs on the device", "first_run": "+ first run (kernel images, cuBLASLt, workspace, pool)",
                "runs": "+ the other runs (read while it waits)"}


def stage_rows(row: dict) -> list:
    """A measured aotirt_run row's steps as [{stage, label, gpu_mib, delta_mib, rss_mib, pool_reserved_mib,
    stack_kib}]: device-wide cudaMemGetInfo used memory at each step (only meaningful alone on the GPU) and what each
    step added; the last one is the final memory line."""
    stages = list(row.get("stages") or [])
    if stages and row.get("memgetinfo_used_mib") is not None:
        child = row.get("child") or {}
        stages.append({"stage": "runs", "gpu_used_mib": row["memgetinfo_used_mib"],
                       "pool_reserved_mib": child.get("pool_reserved_mib"),
                       "rss_kib": None if row.get("rss_mib") is None else row["rss_mib"] * KiB})
    out, prev = [], None
    for st in stages:
        gpu = st.get("gpu_used_mib")
        out.append({"stage": st["stage"], "label": STAGE_LABELS.get(st["stage"], st["stage"]), "gpu_mib": gpu,
                    "delta_mib": None if gpu is None or prev is None else round(gpu - prev, 1),
                    "rss_mib": None if st.get("rss_kib") is None else round(st["rss_kib"] / KiB, 1),
                    "pool_reserved_mib": st.get("pool_reserved_mib"), "stack_kib": st.get("stack_kib")})
        prev = gpu if gpu is not None else prev
    return out


def parse_compute_apps(text: str) -> list:
    """`nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits` -> [(pid, MiB or None)].
    Lines whose memory is "[N/A]" / "Not Supported" keep the PID with None; lines without a PID are dropped."""
    apps = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        mib = parts[1]
        apps.append((int(parts[0]), int(mib) if mib.isdigit() else None))
    return apps


GPU_QUERY = "name,driver_version,memory.total,memory.used,memory.free"


def parse_gpu_query(text: str) -> dict | None:
    """`nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,memory.free --format=csv,noheader,nounits`
    (first line) -> {name, driver, total_mib, used_mib, free_mib} (None for "[N/A]"), or None."""
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        total, used, free = (int(p) if p.isdigit() else None for p in parts[-3:])
        return {"name": ", ".join(parts[:-4]), "driver": parts[-4], "total_mib": total, "used_mib": used,
                "free_mib": free}
    return None


def smi_device_used(q: dict | None):
    """Device-wide used MiB as nvidia-smi sees it: total - free (includes what the driver reserves), else used."""
    if not q:
        return None
    if q.get("total_mib") is not None and q.get("free_mib") is not None:
        return q["total_mib"] - q["free_mib"]
    return q.get("used_mib")


def choose_gpu_reading(pid: int, apps: list, idle_apps: list, dev_now, dev_idle, child_used_mib) -> tuple:
    """(MiB, method, note) for the process `pid`, best source first:
      nvml-pid       NVML's per-process number for that PID (nvidia-smi --query-compute-apps)
      nvml-only-app  nvidia-smi lists other PIDs (the child runs in another PID namespace) and exactly one compute
                     app that was not there at idle: that one
      device-smi     device-wide: nvidia-smi total-free now minus at idle (no process)
      device-cuda    the child's cudaMemGetInfo total-free minus nvidia-smi's idle total-free (or raw, said so)"""
    listed = {p: m for p, m in apps}
    notes = []
    if pid in listed:
        if listed[pid] is not None:
            return listed[pid], "nvml-pid", ""
        notes.append("nvidia-smi lists the PID without a memory figure")
    else:
        idle_pids = {p for p, _ in idle_apps}
        new = [(p, m) for p, m in apps if p not in idle_pids]
        if len(new) == 1 and new[0][1] is not None:
            return new[0][1], "nvml-only-app", (f"nvidia-smi names PID {new[0][0]}, not {pid} (another PID "
                                                f"namespace): the only compute app not there at idle")
        if apps:
            notes.append(f"PID {pid} not among nvidia-smi's {len(apps)} compute apps")
    if dev_now is not None and dev_idle is not None:
        notes.append(f"device-wide: nvidia-smi total-free {dev_now} MiB minus idle {dev_idle} MiB")
        return dev_now - dev_idle, "device-smi", "; ".join(notes)
    if child_used_mib is not None:
        if dev_idle is not None:
            notes.append(f"device-wide: the process's cudaMemGetInfo total-free minus nvidia-smi's idle {dev_idle} MiB")
            return child_used_mib - dev_idle, "device-cuda", "; ".join(notes)
        notes.append("device-wide cudaMemGetInfo total-free with no idle baseline (includes the driver's reserve)")
        return child_used_mib, "device-cuda-raw", "; ".join(notes)
    notes.append("no GPU memory reading")
    return None, "none", "; ".join(notes)


def weights_blob_bytes(package: str) -> tuple:
    """(bytes, entry) of the package's weights blob (data/aotinductor/<model>/*.blob, uncompressed), or (None, "")."""
    with zipfile.ZipFile(package) as z:
        for info in z.infolist():
            if "/data/aotinductor/" in info.filename and info.filename.endswith(".blob"):
                return info.file_size, info.filename
    return None, ""


def package_metadata(package: str) -> dict:
    """The wrapper's metadata JSON in the package (AOTInductor's, incl. aot_inductor.metadata entries), or {}."""
    try:
        with zipfile.ZipFile(package) as z:
            for name in z.namelist():
                if "/data/aotinductor/" in name and name.endswith("_metadata.json"):
                    return json.loads(z.read(name))
    except (OSError, zipfile.BadZipFile, ValueError):
        pass
    return {}


def _gpu(rows: dict, name: str):
    r = rows.get(name) or {}
    return r.get("gpu_mib") if not r.get("error") else None


def breakdown(rows: dict, weights_mib) -> dict:
    """Where aotirt_run's GPU memory goes, from the measured rows (by name) and the weights blob size:
    context (a), cuBLASLt over the context (b - a), weights (c), rest = aotirt_run - b - c (or - a - c without b),
    and of the rest what the runtime's own pool holds (aotirt_run's pool_reserved_mib: the 32 MiB cuBLASLt workspace
    of its stream, live inputs/outputs and the freed blocks the pool keeps) and what is not ours or not in the pool
    (other = rest - pool: kernel images of the wrapper's Triton code and of cuBLASLt's kernels, CUDA graph execs,
    cuBLASLt's and the driver's own allocations). Missing inputs give None."""
    ctx, lt, run = _gpu(rows, "cuda_context"), _gpu(rows, "cublaslt"), _gpu(rows, "aotirt_run")
    plain = _gpu(rows, "aotirt_run_plain")
    child = (rows.get("aotirt_run") or {}).get("child") or {}
    pool_reserved, pool_used = child.get("pool_reserved_mib"), child.get("pool_used_mib")
    out = {"context_mib": ctx, "cublaslt_over_context_mib": None if ctx is None or lt is None else lt - ctx,
           "weights_mib": weights_mib, "aotirt_run_mib": run, "rest_mib": None, "rest_base": None,
           "pool_reserved_mib": pool_reserved, "pool_used_mib": pool_used,
           "pool_kept_free_mib": None if pool_reserved is None or pool_used is None else pool_reserved - pool_used,
           "lt_workspace_mib": LT_WORKSPACE_MIB, "other_mib": None,
           "tuning_and_gemm_graphs_mib": None if run is None or plain is None else run - plain,
           "methods": sorted({(rows.get(n) or {}).get("gpu_method") for n in ("cuda_context", "cublaslt", "aotirt_run")
                              if (rows.get(n) or {}).get("gpu_method")})}
    base, base_name = (lt, "cublaslt") if lt is not None else (ctx, "cuda_context")
    if run is not None and base is not None and weights_mib is not None:
        out["rest_mib"] = run - base - weights_mib
        out["rest_base"] = base_name
        if pool_reserved is not None:
            out["other_mib"] = out["rest_mib"] - pool_reserved
    return out


def derived_rows(b: dict, weights_entry: str) -> list:
    """The (c) and (d) rows of the table from breakdown()."""
    f = _fmt
    w = {"name": "weights", "label": LABELS["weights"], "gpu_mib": b["weights_mib"], "gpu_method": "package zip",
         "rss_mib": None, "hwm_mib": None,
         "notes": f"{weights_entry.rsplit('/', 1)[-1] or 'no weights blob'}; uploaded into one cudaMalloc "
                  f"(AOTInductor's constant blob, not the runtime's pool)"}
    notes = []
    if b["rest_mib"] is not None:
        notes.append(f"= aotirt_run {f(b['aotirt_run_mib'])} - {'(b)' if b['rest_base'] == 'cublaslt' else '(a)'} "
                     f"- (c)")
    if b["pool_reserved_mib"] is not None:
        notes.append(f"ours: the runtime's stream-ordered pool holds {f(b['pool_reserved_mib'])} MiB (in use "
                     f"{f(b['pool_used_mib'])}: the {b['lt_workspace_mib']} MiB cuBLASLt workspace of the run's stream "
                     f"+ live inputs/outputs; freed blocks kept {f(b['pool_kept_free_mib'])})")
    if b["other_mib"] is not None:
        notes.append(f"other {f(b['other_mib'])} MiB: kernel images (wrapper's Triton kernels, cuBLASLt's tuned "
                     f"candidates), CUDA graph execs, cuBLASLt/driver allocations")
    if b["tuning_and_gemm_graphs_mib"] is not None:
        notes.append(f"GEMM tuning + GEMM graphs: {f(b['tuning_and_gemm_graphs_mib'])} MiB (aotirt_run - "
                     f"aotirt_run_plain)")
    if len(b["methods"]) > 1:
        notes.append(f"mixed GPU methods {b['methods']}: the difference is approximate")
    rest = {"name": "aotirt_run_rest", "label": LABELS["aotirt_run_rest"], "gpu_mib": b["rest_mib"],
            "gpu_method": "derived", "rss_mib": None, "hwm_mib": None, "notes": "; ".join(notes)}
    return [w, rest]


def _fmt(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, int) or abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}"


def markdown(result: dict) -> str:
    """The table (and a header line) for benchmarks/RESULTS.md."""
    m = result.get("machine") or {}
    model = result.get("model") or {}
    pkg = result.get("package") or {}
    head = (f"Footprint (`benchmarks/footprint.py`), {m.get('gpu', '?')} (driver {m.get('driver', '?')}), torch "
            f"{result.get('torch') or '?'}, CuPy {result.get('cupy') or '?'}, commit `{result.get('commit') or '?'}`. "
            f"Model: {model.get('description', '?')}; package {_fmt(pkg.get('size_mib'))} MiB, weights blob "
            f"{_fmt(pkg.get('weights_mib'))} MiB. Each row a fresh process, {result.get('warmup', WARMUP)} warm-up + "
            f"{result.get('iters', '?')} runs, read while it waits after its runs; MiB.")
    lines = [head, "", "| row | GPU MiB | GPU method | RSS MiB | peak RSS MiB | notes |", "|---|---|---|---|---|---|"]
    for r in result.get("rows", []):
        notes = r.get("notes") or ""
        if r.get("error"):
            notes = f"ERROR: {r['error']}" + (f"; {notes}" if notes else "")
        notes = notes.replace("|", "/").replace("\n", " ")
        lines.append(f"| {r.get('label') or r['name']} | {_fmt(r.get('gpu_mib'))} | {r.get('gpu_method') or '—'} | "
                     f"{_fmt(r.get('rss_mib'))} | {_fmt(r.get('hwm_mib'))} | {notes} |")
    for r in result.get("rows", []):
        steps = stage_rows(r)
        if not steps:
            continue
        lines += ["", f"{r.get('label') or r['name']}, step by step (device-wide cudaMemGetInfo used memory, the "
                      f"process alone on the GPU; MiB):", "",
                  "| step | GPU MiB | added | RSS MiB | runtime pool MiB | stack KiB/thread |", "|---|---|---|---|---|---|"]
        for st in steps:
            lines.append(f"| {st['label']} | {_fmt(st['gpu_mib'])} | {_fmt(st['delta_mib'])} | {_fmt(st['rss_mib'])} | "
                         f"{_fmt(st['pool_reserved_mib'])} | {_fmt(st['stack_kib'])} |")
    lines.append("")
    lines.append("GPU methods: nvml-pid = NVML per-process (nvidia-smi --query-compute-apps, by PID); nvml-only-app = "
                 "the only new compute app (PIDs of another namespace); device-smi = device-wide nvidia-smi "
                 "total-free minus the idle baseline; device-cuda = the process's cudaMemGetInfo total-free minus "
                 "that baseline; derived = from the rows above.")
    return "\n".join(lines) + "\n"


def out_paths(out: str) -> dict:
    base = out[:-5] if out.endswith(".json") else os.path.join(out, "footprint")
    return {"json": base + ".json", "md": base + ".md"}


def _skip_list(text: str) -> tuple:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in MEASURED]
    if bad:
        raise ValueError(f"unknown row(s) {bad}; rows that can be skipped: {','.join(MEASURED)}")
    return tuple(dict.fromkeys(items))


def parse_args(argv: list | None = None) -> argparse.Namespace:
    """absl flags (benchmarks/cliflags.py), parsed anew each call: same names and defaults as before."""
    f = Flags("benchmarks/footprint.py", __doc__.split("\n\n")[0])
    f.string("out", os.path.join(HERE, "results", "footprint.json"),
             "footprint.json path, or a directory for footprint.json/.md")
    f.define("iters", 20, f"timed runs per row after {WARMUP} warm-up runs", positive_int, "integer")
    f.string("aotirt-run", os.environ.get("AOTIRT_RUN", ""), "the aotirt_run binary (default: $AOTIRT_RUN)")
    f.string("package", "", "reuse this compiled package instead of compiling one")
    f.enum("gemm-backends", None, ("ATEN", "TRITON", "ATEN,TRITON"),
           "max_autotune_gemm_backends of the compiled package (default: the platform's, ATEN on Linux CUDA); "
           "TRITON gives a package that never loads cuBLASLt, so its first run's growth is the wrapper's own kernels")
    f.define("skip", (), f"comma-separated rows not to measure: {','.join(MEASURED)}", _skip_list, "list")
    f.enum("model", "gpt2", MODELS, "gpt2 (default; falls back to mlp, said so in the output, where its export or "
           "compile fails) or mlp (embedding + 4 LayerNorm/Linear/GELU/Linear blocks + head, similar size)")
    # Internal: this file is also each measured child process (not listed by --help).
    f.enum("child", None, ("probe", "compile", "context", "cublaslt", "python", "eager"), "(internal) child role")
    f.string("inputs", "", "(internal) the child's input tensor file")
    f.string("cudart", "", "(internal) libcudart path for the ctypes children")
    f.string("cublaslt", "", "(internal) libcublasLt path for the cublaslt child")
    f.boolean("hold", False, "(internal) wait for a line on stdin after the memory line")
    return f.parse(argv)


# ============================================================================================ models (torch needed)

def gpt2_description() -> str:
    return (f"GPT-2-like (transformers GPT2LMHeadModel, {GPT2['n_layer']} layers, width {GPT2['n_embd']}, "
            f"{GPT2['n_head']} heads, vocab {GPT2['vocab_size']}, {GPT2['n_positions']} positions), bf16, random "
            f"weights, batch 1 x {SEQ} input_ids")


def mlp_description() -> str:
    return (f"Linear/GELU stack (embedding {GPT2['vocab_size']}x{GPT2['n_embd']}, {GPT2['n_layer']} pre-LN blocks "
            f"{GPT2['n_embd']}->{4 * GPT2['n_embd']}->{GPT2['n_embd']} GELU, LM head), bf16, random weights, "
            f"batch 1 x {SEQ} input_ids")


def build_model(kind: str, torch):
    """The benchmark's model (eval mode, float32 on CPU; callers move it): 'gpt2' (needs transformers) or 'mlp'.
    Both take input_ids [1, SEQ] int64 and return logits [1, SEQ, vocab]."""
    torch.manual_seed(0)
    nn = torch.nn
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(**GPT2, bos_token_id=GPT2["vocab_size"] - 1, eos_token_id=GPT2["vocab_size"] - 1)
        lm = GPT2LMHeadModel(cfg)

        class Logits(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids):
                return self.m(input_ids=input_ids, use_cache=False).logits

        return Logits(lm).eval()
    if kind != "mlp":
        raise ValueError(f"unknown model {kind!r}; valid: {MODELS}")
    width, vocab = GPT2["n_embd"], GPT2["vocab_size"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.fc1, self.act, self.fc2 = nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), \
                nn.Linear(4 * width, width)

        def forward(self, h):
            return h + self.fc2(self.act(self.fc1(self.norm(h))))

    class LinearGeluStack(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.blocks = nn.ModuleList(Block() for _ in range(GPT2["n_layer"]))
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, input_ids):
            h = self.embed(input_ids)
            for b in self.blocks:
                h = b(h)
            return self.head(self.norm(h))

    return LinearGeluStack().eval()


def make_input_ids():
    """The input every row uses: [1, SEQ] int64 ids, seeded (numpy)."""
    import numpy as np
    return np.random.RandomState(0).randint(0, GPT2["vocab_size"], size=(1, SEQ)).astype(np.int64)


# ============================================================================================ child processes

def _status_kib() -> dict:
    with open("/proc/self/status") as f:
        return parse_proc_status(f.read())


def _report_and_hold(gpu_used_mib, info: dict, hold: bool) -> None:
    """The child's report: one `info: {json}` line, then the memory line; then (hold) wait for a line on stdin."""
    st = _status_kib()
    print("info: " + json.dumps(info), flush=True)
    used = -1.0 if gpu_used_mib is None else float(gpu_used_mib)
    print(f"memory: rss_kib={st.get('VmRSS', -1)} hwm_kib={st.get('VmHWM', -1)} gpu_used_mib={used:.1f}", flush=True)
    if hold:
        sys.stdin.readline()


class _Cudart:
    """The few CUDA runtime calls the ctypes children need."""

    def __init__(self, path: str):
        import ctypes
        self.ct = ctypes
        self.lib = ctypes.CDLL(path or "libcudart.so.13")
        self.path = path or "libcudart.so.13"

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            self.lib.cudaGetErrorString.restype = self.ct.c_char_p
            raise RuntimeError(f"{what} failed: CUDA error {rc} ({self.lib.cudaGetErrorString(rc).decode()})")

    def device_count(self) -> int:
        n = self.ct.c_int(0)
        self.check(self.lib.cudaGetDeviceCount(self.ct.byref(n)), "cudaGetDeviceCount")
        return n.value

    def driver_version(self) -> int:
        v = self.ct.c_int(0)
        self.lib.cudaDriverGetVersion(self.ct.byref(v))
        return v.value

    def init_context(self, device: int = 0) -> None:
        self.check(self.lib.cudaSetDevice(device), "cudaSetDevice")
        self.check(self.lib.cudaFree(self.ct.c_void_p(0)), "cudaFree(0)")

    def used_mib(self) -> float:
        free, total = self.ct.c_size_t(0), self.ct.c_size_t(0)
        self.check(self.lib.cudaMemGetInfo(self.ct.byref(free), self.ct.byref(total)), "cudaMemGetInfo")
        return (total.value - free.value) / MiB

    def malloc(self, nbytes: int):
        p = self.ct.c_void_p()
        self.check(self.lib.cudaMalloc(self.ct.byref(p), self.ct.c_size_t(nbytes)), "cudaMalloc")
        self.check(self.lib.cudaMemset(p, 0, self.ct.c_size_t(nbytes)), "cudaMemset")
        return p

    def sync(self) -> None:
        self.check(self.lib.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


def pool_stats(lib) -> dict:
    """The device's default stream-ordered pool (the runtime's) through a ctypes libcudart: reserved and used MiB."""
    import ctypes
    pool = ctypes.c_void_p()
    out = {}
    if lib is None or lib.cudaDeviceGetDefaultMemPool(ctypes.byref(pool), ctypes.c_int(0)) != 0:
        return out
    for key, attr in (("pool_reserved_mib", 5), ("pool_used_mib", 7)):  # cudaMemPoolAttr{Reserved,Used}MemCurrent
        v = ctypes.c_uint64(0)
        if lib.cudaMemPoolGetAttribute(pool, ctypes.c_int(attr), ctypes.byref(v)) == 0:
            out[key] = v.value / MiB
    return out


def child_probe(a) -> int:
    """Whether the CUDA runtime sees a GPU (used when nvidia-smi is missing): prints `probe: {json}`."""
    res = {"cudart": a.cudart or "libcudart.so.13"}
    try:
        rt = _Cudart(a.cudart)
        res["driver_version"] = rt.driver_version()
        res["device_count"] = rt.device_count()
    except (OSError, RuntimeError, AttributeError) as e:
        res["error"] = f"{type(e).__name__}: {e}"
    print("probe: " + json.dumps(res), flush=True)
    return 0 if res.get("device_count") else 1


def child_context(a) -> int:
    rt = _Cudart(a.cudart)
    rt.init_context(0)
    _report_and_hold(rt.used_mib(), {"cudart": rt.path, "what": "cudaSetDevice(0) + cudaFree(0)"}, a.hold)
    return 0


def cublaslt_matmul(rt: _Cudart, lt_path: str, n: int = 64) -> dict:
    """One cuBLASLt handle and one n x n x n bf16 matmul (fp32 compute, no workspace, implicit heuristic)."""
    ct = rt.ct
    lt = ct.CDLL(lt_path or "libcublasLt.so.13")
    vp = ct.c_void_p

    def ok(st, what):
        if st != 0:
            raise RuntimeError(f"{what} failed: cublasStatus {st}")

    handle, desc = vp(), vp()
    ok(lt.cublasLtCreate(ct.byref(handle)), "cublasLtCreate")
    ok(lt.cublasLtMatmulDescCreate(ct.byref(desc), ct.c_int(68), ct.c_int(0)), "cublasLtMatmulDescCreate")  # 32F
    layouts = []
    for _ in range(3):
        lay = vp()
        ok(lt.cublasLtMatrixLayoutCreate(ct.byref(lay), ct.c_int(14), ct.c_uint64(n), ct.c_uint64(n), ct.c_int64(n)),
           "cublasLtMatrixLayoutCreate")  # CUDA_R_16BF, column-major n x n
        layouts.append(lay)
    a_, b_, d_ = (rt.malloc(n * n * 2) for _ in range(3))
    alpha, beta = ct.c_float(1.0), ct.c_float(0.0)
    lt.cublasLtMatmul.argtypes = [vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, ct.c_size_t, vp]
    ok(lt.cublasLtMatmul(handle, desc, ct.byref(alpha), a_, layouts[0], b_, layouts[1], ct.byref(beta), d_,
                         layouts[2], d_, layouts[2], None, None, 0, None), "cublasLtMatmul")
    rt.sync()
    return {"cublaslt": lt_path or "libcublasLt.so.13", "matmul": f"{n}x{n}x{n} bf16, fp32 compute, no workspace",
            "operands_kib": 3 * n * n * 2 // KiB}


def child_cublaslt(a) -> int:
    rt = _Cudart(a.cudart)
    rt.init_context(0)
    info = {"cudart": rt.path}
    try:
        info.update(cublaslt_matmul(rt, a.cublaslt))
    except RuntimeError as e:  # the handle (and cuBLASLt loaded) still count; say the matmul did not run
        info.update(cublaslt=a.cublaslt, matmul=f"matmul FAILED ({e}): handle only")
    _report_and_hold(rt.used_mib(), info, a.hold)
    return 0


def child_python(a) -> int:
    """aotirt.load + run with CuPy inputs; torch must never be imported here."""
    if "torch" in sys.modules:
        raise SystemExit("torch was imported before the aotirt + CuPy run")
    import cupy as cp
    import aotirt
    from aotirt import tensorfile
    ids = tensorfile.load_list(a.inputs)[0]
    x = cp.asarray(ids)
    runner = aotirt.load(a.package)
    outs = None
    for _ in range(WARMUP + a.iters):
        outs = runner(x)
    cp.cuda.runtime.deviceSynchronize()
    y = cp.from_dlpack(outs[0])  # the last run's output, as a CuPy array (no copy)
    free, total = cp.cuda.runtime.memGetInfo()
    with open("/proc/self/maps") as f:
        libtorch = sorted({ln.split()[-1] for ln in f if "libtorch" in ln or "libc10" in ln})
    info = {"cupy": cp.__version__, "aotirt": aotirt.__version__, "output_shape": list(y.shape),
            "output_dtype": str(y.dtype), "torch_in_sys_modules": "torch" in sys.modules, "libtorch_maps": libtorch,
            "cupy_pool_mib": cp.get_default_memory_pool().total_bytes() / MiB}
    try:  # the device's default pool is the driver's: any libcudart in the process reads the runtime's
        info.update(pool_stats(_Cudart(a.cudart).lib))
    except OSError as e:
        info["pool_note"] = f"no libcudart for the pool reading: {e}"
    if "torch" in sys.modules:
        raise SystemExit("torch was imported in the aotirt + CuPy process (it must not be)")
    if libtorch:
        raise SystemExit(f"libtorch mapped in the aotirt + CuPy process: {libtorch}")
    _report_and_hold((total - free) / MiB, info, a.hold)
    del y, outs
    return 0


def child_eager(a) -> int:
    import torch
    from aotirt import tensorfile
    model = build_model(a.model, torch).to("cuda", torch.bfloat16)
    x = tensorfile.load(a.inputs, framework="torch")["0"].cuda()
    y = None
    with torch.no_grad():
        for _ in range(WARMUP + a.iters):
            y = model(x)
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    info = {"torch": torch.__version__, "output_shape": list(y.shape), "output_dtype": str(y.dtype),
            "torch_reserved_mib": torch.cuda.memory_reserved() / MiB,
            "torch_allocated_mib": torch.cuda.memory_allocated() / MiB,
            "torch_peak_allocated_mib": torch.cuda.max_memory_allocated() / MiB,
            "attn_implementation": getattr(getattr(getattr(model, "m", None), "config", None), "_attn_implementation",
                                           None)}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    _report_and_hold((total - free) / MiB, info, a.hold)
    return 0


def child_compile(a) -> int:
    """Compiles the model into a.package (max_autotune OFF); falls back to the mlp model when the GPT-2 export or
    compile fails. Prints `compiled: {json}`."""
    import torch
    import aotirt
    from aotirt import tensorfile
    x = tensorfile.load(a.inputs, framework="torch")["0"].cuda()
    # MATH attention as in the recorded runs (results/footprint.md): the platform default (CUDNN,TRITON) would also
    # load cuDNN, whose footprint these runs did not measure
    # max_autotune ON only for Triton GEMMs (OFF makes every GEMM an ATen shim call, i.e. cuBLASLt)
    opts = aotirt.CompileOptions(max_autotune=bool(a.gemm_backends and "TRITON" in a.gemm_backends),
                                 attention_backend="MATH", max_autotune_gemm_backends=a.gemm_backends or None)
    kinds = [a.model] + (["mlp"] if a.model == "gpt2" else [])
    res = {"fallback_reason": ""}
    for kind in kinds:
        t0 = time.perf_counter()
        try:
            model = build_model(kind, torch).to("cuda", torch.bfloat16)
            aotirt.compile(model, (x,), a.package, options=opts,
                           inductor_configs={"aot_inductor.metadata": {"footprint_model": kind}})
        except Exception as e:  # noqa: BLE001 (GPT-2's export or lowering failing: fall back, say why)
            if kind == kinds[-1]:
                raise
            res["fallback_reason"] = f"{kind}: {type(e).__name__}: {str(e)[:600]}"
            say(f"compiling {kind} failed ({res['fallback_reason'][:300]}); falling back to the mlp model")
            continue
        res.update(model=kind, compile_s=round(time.perf_counter() - t0, 1), torch=torch.__version__)
        break
    print("compiled: " + json.dumps(res), flush=True)
    return 0


CHILDREN = {"probe": child_probe, "compile": child_compile, "context": child_context, "cublaslt": child_cublaslt,
            "python": child_python, "eager": child_eager}


# ============================================================================================ parent

class Smi:
    """nvidia-smi queries (None / [] where it is missing or fails)."""

    def __init__(self, exe: str | None = None, index: int = 0):
        self.exe = exe if exe is not None else shutil.which("nvidia-smi")
        self.index = index

    def _run(self, *args) -> str | None:
        if not self.exe:
            return None
        try:
            p = subprocess.run([self.exe, *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return p.stdout if p.returncode == 0 else None

    def gpu(self) -> dict | None:
        out = self._run("-i", str(self.index), f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits")
        return parse_gpu_query(out) if out else None

    def apps(self) -> list:
        out = self._run("--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
        return parse_compute_apps(out) if out else []


def _visible_index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def _wheel_lib_dirs() -> list:
    try:
        from aotirt.runtime import nvidia_wheel_lib_dirs
        return nvidia_wheel_lib_dirs()
    except Exception:  # noqa: BLE001
        return []


def find_lib(soname: str, near: list) -> str:
    """The first existing `soname` in the folders `near`, then the NVIDIA wheel folders; else the bare soname (the
    dynamic loader's search)."""
    for d in [*near, *_wheel_lib_dirs()]:
        p = os.path.join(d, soname)
        if d and os.path.isfile(p):
            return p
    return soname


def _dist_version(*names: str) -> str:
    from importlib import metadata
    for n in names:
        try:
            return metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return ""


def _cupy_version() -> str:
    from importlib import metadata
    try:
        for dist in metadata.packages_distributions().get("cupy", []):
            return metadata.version(dist)
    except Exception:  # noqa: BLE001
        pass
    return ""


class NoGpu(RuntimeError):
    pass


def detect_gpu(smi: Smi, cudart: str) -> dict:
    """{gpu, driver, memory_total_mib, how} of the GPU the rows run on; NoGpu with the reasons where there is none."""
    q = smi.gpu()
    if q and q.get("name"):
        return {"gpu": q["name"], "driver": q["driver"], "memory_total_mib": q.get("total_mib"), "how": "nvidia-smi"}
    why = [f"nvidia-smi: {'not found' if not smi.exe else 'lists no GPU ' + str(smi.index)}"]
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "probe", "--cudart", cudart],
                           capture_output=True, text=True, timeout=60)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("probe: ")), "")
        probe = json.loads(line[len("probe: "):]) if line else {"error": (p.stderr or p.stdout)[-300:]}
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        probe = {"error": f"{type(e).__name__}: {e}"}
    if probe.get("device_count"):
        return {"gpu": f"unknown name ({probe['device_count']} CUDA device(s); no nvidia-smi)",
                "driver": f"CUDA driver API {probe.get('driver_version')}", "memory_total_mib": None, "how": "cudart"}
    why.append(f"CUDA runtime ({probe.get('cudart', cudart)}): "
               f"{probe.get('error') or 'cudaGetDeviceCount found 0 devices'}")
    raise NoGpu("; ".join(why))


def measure(name: str, cmd: list, smi: Smi, idle: dict, env: dict | None = None, timeout: float = HOLD_TIMEOUT_S,
            settle_s: float = 0.5) -> dict:
    """Runs `cmd` (a child that prints its `memory:` line after its runs and then waits for a line on stdin), reads
    its GPU memory (choose_gpu_reading) and /proc/<pid>/status while it waits, lets it go and collects the row."""
    row = {"name": name, "label": LABELS.get(name, name), "gpu_mib": None, "gpu_method": None, "rss_mib": None,
           "hwm_mib": None, "notes": "", "cmd": cmd}
    t0 = time.perf_counter()
    err = tempfile.TemporaryFile(mode="w+")
    try:
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    except OSError as e:
        row["error"] = f"cannot start {cmd[0]}: {e}"
        return row
    lines: queue.Queue = queue.Queue()

    def pump():
        for ln in p.stdout:
            lines.put(ln)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    out, mem, info, ended, stages = [], None, {}, False, []
    deadline = time.monotonic() + timeout
    while mem is None:
        try:
            ln = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            row["error"] = f"no memory line within {timeout:.0f} s"
            p.kill()
            break
        if ln is None:
            ended = True
            break
        out.append(ln)
        if ln.startswith("info: "):
            try:
                info = json.loads(ln[len("info: "):])
            except ValueError:
                pass
        stage = parse_stage_line(ln)
        if stage is not None:
            stages.append(stage)
        mem = parse_memory_line(ln)
    if stages:
        row["stages"] = stages
    if mem is not None:
        time.sleep(settle_s)
        apps, q = smi.apps(), smi.gpu()
        try:
            with open(f"/proc/{p.pid}/status") as f:
                seen = parse_proc_status(f.read())
        except OSError:
            seen = {}
        gpu, method, note = choose_gpu_reading(p.pid, apps, idle.get("apps", []), smi_device_used(q),
                                               idle.get("device_used_mib"), mem.get("gpu_used_mib"))
        rss = mem.get("rss_kib") if mem.get("rss_kib") is not None else seen.get("VmRSS")
        hwm = mem.get("hwm_kib") if mem.get("hwm_kib") is not None else seen.get("VmHWM")
        row.update(gpu_mib=gpu, gpu_method=method, rss_mib=None if rss is None else round(rss / KiB, 1),
                   hwm_mib=None if hwm is None else round(hwm / KiB, 1), notes=note, pid=p.pid,
                   nvml_apps=apps, device_smi_used_mib=smi_device_used(q),
                   device_delta_mib=None if smi_device_used(q) is None or idle.get("device_used_mib") is None
                   else smi_device_used(q) - idle["device_used_mib"],
                   memgetinfo_used_mib=mem.get("gpu_used_mib"), parent_saw_rss_kib=seen.get("VmRSS"))
        child = dict(info)
        child.update({k: v for k, v in mem.items() if k.startswith("pool_")})
        row["child"] = child
    try:
        p.stdin.write("\n")
        p.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        pass
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
        row.setdefault("error", "did not exit within 60 s after its report")
    while not ended:  # the rest of its output (the process has exited: the pump ends soon)
        try:
            ln = lines.get(timeout=5)
        except queue.Empty:
            break
        if ln is None:
            break
        out.append(ln)
    err.seek(0)
    stderr = err.read()
    err.close()
    row["rc"], row["elapsed_s"] = rc, round(time.perf_counter() - t0, 1)
    row["stdout_tail"] = "".join(out)[-1500:]
    if rc != 0 and "error" not in row:
        row["error"] = f"exit {rc}: {last_line(stderr) or last_line(''.join(out))}"
    elif mem is None and "error" not in row:
        row["error"] = f"no memory line (exit {rc}): {last_line(stderr) or last_line(''.join(out))}"
    if row.get("error"):
        row["stderr_tail"] = stderr[-3000:]
    return row


def last_line(text: str) -> str:
    """The last non-empty line (a Python traceback's exception, a runner's `error: ...`), at most 400 characters."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][-400:] if lines else ""


def _row_notes(row: dict) -> None:
    """Adds what the child told to the row's notes."""
    c = row.get("child") or {}
    extra = []
    n = row["name"]
    if n in ("aotirt_run", "aotirt_run_plain"):
        if c.get("pool_reserved_mib") is not None:
            extra.append(f"runtime pool {_fmt(c['pool_reserved_mib'])} MiB (in use {_fmt(c.get('pool_used_mib'))})")
        if "libtorch mapped: no" in row.get("stdout_tail", ""):
            extra.append("libtorch mapped: no")
    if n == "aotirt_run_plain":
        extra.append("AOTIRT_GEMM_TUNE=0 AOTIRT_GEMM_GRAPHS=0")
    if n == "python_cupy" and c:
        extra.append(f"torch in sys.modules: {c.get('torch_in_sys_modules')} (asserted), libtorch mapped: "
                     f"{'no' if not c.get('libtorch_maps') else c['libtorch_maps']}")
        if c.get("pool_reserved_mib") is not None:
            extra.append(f"runtime pool {_fmt(c['pool_reserved_mib'])} MiB (in use {_fmt(c.get('pool_used_mib'))})")
        extra.append(f"CuPy pool {_fmt(c.get('cupy_pool_mib'))} MiB")
    if n == "torch_eager" and c:
        extra.append(f"torch caching allocator reserved {_fmt(c.get('torch_reserved_mib'))} MiB, peak allocated "
                     f"{_fmt(c.get('torch_peak_allocated_mib'))} MiB")
        if c.get("attn_implementation"):
            extra.append(f"attention {c['attn_implementation']} (the package: SDPA's math decomposition)")
    if n == "cublaslt" and c.get("matmul"):
        extra.append(c["matmul"])
    if str(row.get("gpu_method")).startswith("nvml") and row.get("device_delta_mib") is not None:
        extra.append(f"device-wide +{_fmt(row['device_delta_mib'])} MiB over idle")
    row["notes"] = "; ".join([*extra, *([row["notes"]] if row.get("notes") else [])])


def run(args) -> int:
    t_start = time.perf_counter()
    smi = Smi(index=_visible_index())
    runner = os.path.abspath(args.aotirt_run) if args.aotirt_run else ""
    near = [os.path.join(os.path.dirname(runner), "..", "lib"), os.path.dirname(runner)] if runner else []
    if os.environ.get("AOTIRT_BUNDLE"):
        near.append(os.path.join(os.environ["AOTIRT_BUNDLE"], "lib"))
    cudart = find_lib("libcudart.so.13", near)
    cublaslt = os.environ.get("AOTIRT_CUBLASLT") or find_lib("libcublasLt.so.13", near)
    try:
        machine = detect_gpu(smi, cudart)
    except NoGpu as e:
        print(f"footprint: no GPU here ({e}). This benchmark measures GPU memory: run it on a GPU machine "
              f"(tools/gpu/run.sh bench with BENCHES=benchmarks/footprint.py).", file=sys.stderr, flush=True)
        return 1
    say(f"GPU {machine['gpu']} (driver {machine['driver']}); cudart {cudart}; cuBLASLt {cublaslt}")
    if args.package and not os.path.isfile(args.package):
        print(f"footprint: --package {args.package}: no such file", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="aotirt_footprint_")
    try:
        return _run_in(args, smi, machine, runner, cudart, cublaslt, work, t_start)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_in(args, smi: Smi, machine: dict, runner: str, cudart: str, cublaslt: str, work: str, t_start: float) -> int:
    from aotirt import tensorfile
    inputs = os.path.join(work, "input_ids.safetensors")
    tensorfile.save(inputs, {"0": make_input_ids()})
    me = [sys.executable, os.path.abspath(__file__)]
    compile_info = {}
    if args.package:
        package = os.path.abspath(args.package)
        kind = package_metadata(package).get("footprint_model") or args.model
        say(f"package {package} (model {kind}, reused)")
    else:
        cache = os.environ.get("AOTIRT_BENCH_CACHE")
        pkg_dir = os.path.join(cache, "footprint") if cache else os.path.join(tempfile.gettempdir(), "aotirt_footprint")
        os.makedirs(pkg_dir, exist_ok=True)
        gemm = f"_{args.gemm_backends.replace(',', '_').lower()}" if args.gemm_backends else ""
        package = os.path.join(pkg_dir, f"footprint_{args.model}{gemm}.pt2")
        say(f"compiling the {args.model} model (GEMMs {args.gemm_backends or 'platform default'}) into {package} in a child process ...")
        t0 = time.perf_counter()
        try:
            p = subprocess.run([*me, "--child", "compile", "--model", args.model, "--package", package, "--inputs",
                                inputs] + (["--gemm-backends", args.gemm_backends] if args.gemm_backends else []),
                               stdout=subprocess.PIPE, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"footprint: compiling did not finish within {COMPILE_TIMEOUT_S} s", file=sys.stderr)
            return 1
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("compiled: ")), "")
        if p.returncode != 0 or not line:
            print(f"footprint: compiling failed (exit {p.returncode}; its stderr is above)\n{p.stdout[-2000:]}",
                  file=sys.stderr)
            return 1
        compile_info = json.loads(line[len("compiled: "):])
        kind = compile_info["model"]
        say(f"compiled {kind} in {time.perf_counter() - t0:.0f} s -> {package} (reuse with --package {package})"
            + (f"; FELL BACK from gpt2: {compile_info['fallback_reason'][:300]}" if compile_info.get("fallback_reason")
               else ""))
    wbytes, wentry = weights_blob_bytes(package)
    weights_mib = None if wbytes is None else round(wbytes / MiB, 1)
    idle = {"apps": smi.apps(), "gpu": smi.gpu()}
    idle["device_used_mib"] = smi_device_used(idle["gpu"])
    say(f"idle: device total-free {idle['device_used_mib']} MiB, compute apps {idle['apps']}")
    common = ["--package", package, "--inputs", inputs, "--iters", str(args.iters), "--model", kind,
              "--cudart", cudart, "--cublaslt", cublaslt, "--hold"]
    run_env = dict(os.environ)
    if os.path.isabs(cublaslt) and not os.environ.get("AOTIRT_CUBLASLT"):
        run_env["AOTIRT_CUBLASLT"] = cublaslt  # so aotirt_run finds the wheel's cuBLASLt wherever it is
    plain_env = dict(run_env, AOTIRT_GEMM_TUNE="0", AOTIRT_GEMM_GRAPHS="0")
    run_cmd = [runner, "--package", package, "--inputs", inputs, "--warmup", str(WARMUP), "--iters", str(args.iters),
               "--check-no-libtorch", "--report-memory", "--hold"]
    plan = [("cuda_context", [*me, "--child", "context", *common], None),
            ("cublaslt", [*me, "--child", "cublaslt", *common], None),
            ("aotirt_run", run_cmd, run_env),
            ("aotirt_run_plain", run_cmd, plain_env),
            ("python_cupy", [*me, "--child", "python", *common], None),
            ("torch_eager", [*me, "--child", "eager", *common], None)]
    rows = {}
    for name, cmd, env in plan:
        if name in args.skip:
            say(f"{name}: skipped (--skip)")
            continue
        if cmd[0] == "" or (cmd is run_cmd and not os.path.isfile(runner)):
            rows[name] = {"name": name, "label": LABELS[name], "gpu_mib": None, "gpu_method": None, "rss_mib": None,
                          "hwm_mib": None, "notes": "",
                          "error": f"no aotirt_run: pass --aotirt-run or set AOTIRT_RUN (got {runner!r})"}
            say(f"{name}: {rows[name]['error']}")
            continue
        say(f"{name}: measuring ...")
        row = measure(name, cmd, smi, idle, env=env)
        if cmd is run_cmd and "unknown argument '--report-memory'" in row.get("error", ""):
            row["error"] += " (this aotirt_run predates --report-memory: rebuild the bundle, tools/gpu/bundle.sh)"
        _row_notes(row)
        rows[name] = row
        if row.get("error"):
            say(f"{name}: ERROR {row['error']}\n{row.get('stderr_tail', '')[-1500:]}")
        else:
            say(f"{name}: GPU {_fmt(row['gpu_mib'])} MiB ({row['gpu_method']}), RSS {_fmt(row['rss_mib'])} MiB, "
                f"peak {_fmt(row['hwm_mib'])} MiB in {row['elapsed_s']} s")
    b = breakdown(rows, weights_mib)
    order = ["aotirt_run", "python_cupy", "torch_eager", "cuda_context", "cublaslt"]
    table = [rows[n] for n in order if n in rows]
    table += derived_rows(b, wentry)
    if "aotirt_run_plain" in rows:
        table.append(rows["aotirt_run_plain"])
    idle_end = smi.gpu()
    child_versions = {k: v for r in rows.values() for k, v in (r.get("child") or {}).items()
                      if k in ("torch", "cupy", "transformers")}
    desc = gpt2_description() if kind == "gpt2" else mlp_description()
    if args.gemm_backends:
        desc += f"; GEMMs lowered {args.gemm_backends}"
    if compile_info.get("fallback_reason"):
        desc += f" (FALLBACK: GPT-2 failed: {compile_info['fallback_reason'][:200]})"
    result = {
        "benchmark": "footprint", "commit": provenance.commit(), "machine": machine,
        "torch": child_versions.get("torch") or _dist_version("torch"),
        "cupy": child_versions.get("cupy") or _cupy_version(),
        "transformers": child_versions.get("transformers") or _dist_version("transformers"),
        "python": sys.version.split()[0], "command": [sys.executable, *sys.argv],
        "env": {k: os.environ.get(k) for k in ("CUDA_MODULE_LOADING", "AOTIRT_GEMM_TUNE", "AOTIRT_GEMM_GRAPHS",
                                               "AOTIRT_CUBLASLT", "CUDA_VISIBLE_DEVICES")},
        "model": {"kind": kind, "description": desc, "fallback_reason": compile_info.get("fallback_reason", "")},
        "package": {"path": package, "size_mib": round(os.path.getsize(package) / MiB, 1), "weights_mib": weights_mib,
                    "weights_entry": wentry, "compile_s": compile_info.get("compile_s"), "reused": bool(args.package)},
        "iters": args.iters, "warmup": WARMUP, "aotirt_run": runner, "cudart": cudart, "cublaslt": cublaslt,
        "aotirt_run_env": {k: run_env.get(k) for k in ("AOTIRT_CUBLASLT",)},
        "idle": {"start": idle, "end_gpu": idle_end}, "skipped": list(args.skip),
        "rows": [{k: v for k, v in r.items() if k != "cmd"} | {"cmd": " ".join(r.get("cmd", []))} for r in table],
        "breakdown": b, "elapsed_s": round(time.perf_counter() - t_start, 1),
    }
    paths = out_paths(args.out)
    os.makedirs(os.path.dirname(os.path.abspath(paths["json"])), exist_ok=True)
    with open(paths["json"], "w") as f:
        json.dump(result, f, indent=1)
    md = markdown(result)
    with open(paths["md"], "w") as f:
        f.write(md)
    print(md)
    failed = [n for n, r in rows.items() if r.get("error")]
    say(f"wrote {paths['json']} and {paths['md']} in {result['elapsed_s']} s"
        + (f"; FAILED rows: {','.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(argv: list | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return CHILDREN[args.child](args)
    return run(args)


if __name__ == "__main__":
    import importlib.util
    if importlib.util.find_spec("aotirt") is None:  # (not imported here: the ctypes children stay small)
        sys.path.insert(0, os.path.join(HERE, "..", "python"))  # else the GPU bundle's copy on PYTHONPATH
    sys.exit(main())
