"""Results -> the issue's targets, a Markdown table and a PNG bar chart."""
from __future__ import annotations

from typing import Any

from model_bench.models import MODELS
from model_bench.variants import FIXED, OURS, TORCH_COMPILE, TORCH_COMPILE_DEFAULT, VARIANTS

def _row(rows: list, model: str, variant: str, graphs: bool) -> dict:
    for r in rows:
        if r.get("model") == model and r.get("variant") == variant and bool(r.get("graphs")) == graphs:
            return r
    return {}


def _ms(rows: list, model: str, variant: str, graphs: bool) -> float | None:
    return _row(rows, model, variant, graphs).get("ms")


def targets(rows: list) -> list:
    """The issue's four targets, evaluated on whatever rows exist (None where a needed row is missing). A target
    compares rows measured side by side in one run: where the rows it needs come from different runs (a merged
    results file), the value is shown but `met` is None."""
    out = []
    models = sorted({r["model"] for r in rows}, key=lambda m: MODELS.index(m) if m in MODELS else 99)

    def add(target, model, graphs, value, limit, better, detail, uses=()):
        met = None if value is None else (value <= limit if better == "le" else value >= limit)
        runs = {_row(rows, model, v, g).get("run") for v, g in uses} - {None}
        if len(runs) > 1:
            met = None
            detail += "; rows from different runs, not side by side"
        out.append({"target": target, "model": model, "graphs": graphs, "value": value, "limit": limit,
                    "met": met, "detail": detail})

    for m in models:
        for tc, b in TORCH_COMPILE.items():  # 1: runtime vs torch.compile, same GEMM backends, no graphs
            ours = [v for v, bb in FIXED.items() if bb == b][0]
            a, t = _ms(rows, m, ours, False), _ms(rows, m, tc, False)
            if t is None and tc != "torch_compile":
                continue
            add("aotirt <= 1.02 x torch.compile (no graphs)", m, False,
                None if a is None or t is None else a / t, 1.02, "le", f"{ours} / {tc} ({b})",
                [(ours, False), (tc, False)])
    for m in [m for m in models if m == "gemma"]:  # 2: graphs vs no graphs on the Gemma-like model
        for v in list(FIXED) + ["aotirt_auto"]:
            g, n = _ms(rows, m, v, True), _ms(rows, m, v, False)
            if g is None and n is None:
                continue
            add("graphs <= 0.7 x no graphs (gemma)", m, True, None if g is None or n is None else g / n, 0.7,
                "le", f"{v}: graphs / no graphs", [(v, True), (v, False)])
    for m in models:  # 3: AUTO vs the fastest fixed choice (without graphs: the AUTO that times without them)
        for graphs in (True, False):
            fixed = {v: _ms(rows, m, v, graphs) for v in FIXED}
            have = {v: x for v, x in fixed.items() if x is not None}
            av = "aotirt_auto"
            if not graphs and _ms(rows, m, "aotirt_auto_eager", False) is not None:
                av = "aotirt_auto_eager"
            a = _ms(rows, m, av, graphs)
            if a is None and not have:
                continue
            best = min(have, key=have.get) if have else None
            choice = next((r.get("auto_choice") for r in rows if r.get("model") == m
                           and r.get("variant") == av and r.get("auto_choice")), None)
            add("AUTO <= 1.01 x fastest fixed", m, graphs,
                None if a is None or best is None else a / have[best], 1.01, "le",
                f"fastest fixed: {best} ({FIXED.get(best)}); {av} chose {choice}"
                + ("" if choice is None or best is None else
                   " (the fastest)" if choice == FIXED.get(best) else " (not the fastest)")
                + ("" if len(have) == len(FIXED) else f"; only {sorted(have)} measured"),
                [(av, graphs)] + [(v, graphs) for v in have])
    for m in [m for m in models if m == "siglip"]:  # 4: ATEN,TRITON vs TRITON on SigLIP
        for graphs in (False, True):
            at, tr = _ms(rows, m, "aotirt_aten_triton", graphs), _ms(rows, m, "aotirt_triton", graphs)
            if at is None and tr is None:
                continue
            add("ATEN,TRITON >= 8% faster than TRITON (siglip)", m, graphs,
                None if at is None or tr is None else 1.0 - at / tr, 0.08, "ge",
                "speedup = 1 - aten_triton / triton", [("aotirt_aten_triton", graphs), ("aotirt_triton", graphs)])
    for m in models:  # 5 (issue 13): with graphs, our best choice vs the faster of torch.compile and eager + graph
        ours = {v: _ms(rows, m, v, True) for v in OURS}
        ours = {v: x for v, x in ours.items() if x is not None}
        peers = {v: _ms(rows, m, v, True) for v in ("eager", TORCH_COMPILE_DEFAULT)}
        peers = {v: x for v, x in peers.items() if x is not None}
        if not ours or TORCH_COMPILE_DEFAULT not in peers:
            continue
        bo, bp = min(ours, key=ours.get), min(peers, key=peers.get)
        add("best aotirt <= 1.00 x faster of torch.compile(max-autotune) and eager (graphs)", m, True,
            ours[bo] / peers[bp], 1.00, "le", f"{bo} {ours[bo]:.3f} ms / {bp} {peers[bp]:.3f} ms",
            [(bo, True), (bp, True)])
        # 6: device memory of that choice vs torch.compile's, both measured as device-wide growth (ours less its
        # own copy of the weights, which torch's variants share with the eager model)
        mo = _row(rows, m, bo, True).get("device_mb_less_weights")
        mt = _row(rows, m, TORCH_COMPILE_DEFAULT, True).get("device_mb")
        if mo is not None and mt:
            add("memory of that choice <= 1.05 x torch.compile (graphs)", m, True, max(mo, 0.0) / mt, 1.05, "le",
                f"{bo} {mo:.0f} MB (less weights) / {TORCH_COMPILE_DEFAULT} {mt:.0f} MB (device-wide growth)",
                [(bo, True), (TORCH_COMPILE_DEFAULT, True)])
    return out


# ----------------------------------------------------------------------------------------------------- report

def _f(x: Any, fmt: str = "{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def markdown(result: dict) -> str:
    rows = result.get("rows", [])
    meta = result.get("meta", {})
    lines = [f"Model benchmark (`benchmarks/models.py`), {meta.get('gpu', meta.get('device', '?'))}, torch "
             f"{meta.get('torch', '?')}, commit {meta.get('commit') or '?'}, run {meta.get('run', '?')}. "
             f"ms per call (median); graphs = whole-model CUDA graph replay incl. input copy; mean |diff| vs the "
             f"float32 model.", ""]
    run_ids = sorted({r.get("run") for r in rows if r.get("run")})
    label = {}
    if len(run_ids) > 1:  # a merged file: say which run measured what
        commits = {m.get("run"): m.get("commit") for m in result.get("runs", [])}
        label = {rid: f"run {i + 1}" for i, rid in enumerate(run_ids)}
        lines[0] += " Rows come from " + ", ".join(
            f"{label[rid]} ({rid}, commit {(commits.get(rid) or '?')[:10]})" for rid in run_ids) + \
            "; the notes column names each row's run, and a target whose rows come from different runs is n/a."
    models = sorted({r["model"] for r in rows}, key=lambda m: MODELS.index(m) if m in MODELS else 99)
    lines += ["| model | variant | ms (no graphs) | ms (graphs) | graphs / no | vs torch.compile (no graphs) | "
              "mean abs diff | device MB | notes |", "|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        tc = _ms(rows, m, "torch_compile", False)
        variants = sorted({r["variant"] for r in rows if r["model"] == m},
                          key=lambda v: VARIANTS.index(v) if v in VARIANTS else 99)
        for v in variants:
            n, g = _ms(rows, m, v, False), _ms(rows, m, v, True)
            rs = [r for r in rows if r["model"] == m and r["variant"] == v]
            diffs = [r.get("mean_abs_diff") for r in rs if r.get("mean_abs_diff") is not None]
            notes = []
            for r in rs:
                if r.get("error"):
                    notes.append(f"{'graphs' if r['graphs'] else 'no graphs'}: {r['error'][:80]}")
            gemm = next((r.get("gemm_per_call") for r in rs if r.get("gemm_per_call")), None)
            if gemm and gemm.get("calls"):
                notes.append(f"GEMM shim calls {gemm['calls']}/call, {gemm.get('graph_replays', 0)} replayed")
            auto_choice = next((r.get("auto_choice") for r in rs if r.get("auto_choice")), None)
            if auto_choice:
                notes.insert(0, f"chose {auto_choice}")
            if label:
                notes.insert(0, "/".join(sorted({label[r["run"]] for r in rs if r.get("run") in label})))
            gr = _row(rows, m, v, True) or _row(rows, m, v, False)
            mem_s = _f(gr.get("device_mb"), "{:.0f}")
            if gr.get("device_mb_less_weights") is not None:
                mem_s += f" ({gr['device_mb_less_weights']:.0f} less weights)"
            elif gr.get("torch_peak_mb") is not None:
                mem_s += f" (peak alloc {gr['torch_peak_mb']:.0f})"
            lines.append(f"| {m} | {v} | {_f(n)} | {_f(g)} | {_f(None if n is None or g is None else g / n, '{:.2f}')}"
                         f" | {_f(None if n is None or tc is None else n / tc, '{:.2f}x')} | "
                         f"{_f(max(diffs) if diffs else None, '{:.2e}')} | {mem_s} | "
                         f"{'; '.join(notes).replace('|', '/')} |")
    lines += ["", "| target | model | graphs | value | limit | met | detail |", "|---|---|---|---|---|---|---|"]
    for t in result.get("targets", []):
        met = {True: "**met**", False: "**missed**", None: "n/a"}[t["met"]]
        lines.append(f"| {t['target']} | {t['model']} | {'on' if t['graphs'] else 'off'} | {_f(t['value'])} | "
                     f"{t['limit']} | {met} | {t['detail']} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: str) -> str:
    """Writes a PNG bar chart (ms per call per variant, no graphs vs graphs, one panel per model); returns a
    message (the reason when matplotlib is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        return f"plot skipped: matplotlib is not importable ({e})"
    rows = [r for r in result.get("rows", []) if r.get("ms") is not None]
    models = sorted({r["model"] for r in rows}, key=lambda m: MODELS.index(m) if m in MODELS else 99)
    if not models:
        return "plot skipped: no measured rows"
    cols = min(len(models), 4)
    nrows = (len(models) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.5 * cols, 4.2 * nrows), squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_visible(False)
    for ax, m in zip(axes.flat, models):
        variants = sorted({r["variant"] for r in rows if r["model"] == m},
                          key=lambda v: VARIANTS.index(v) if v in VARIANTS else 99)
        xs = range(len(variants))
        for off, graphs, label in ((-0.2, False, "no graphs"), (0.2, True, "CUDA graphs")):
            ys = [_ms(rows, m, v, graphs) or 0.0 for v in variants]
            ax.bar([x + off for x in xs], ys, width=0.4, label=label)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([v.replace("torch_compile", "tc").replace("aotirt_", "aotirt\n") for v in variants],
                           fontsize=7)
        ax.set_title(m)
        ax.set_ylabel("ms per call")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"wrote {path}"
