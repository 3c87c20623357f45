"""Graph rewrites for mixture-of-experts layers, before Inductor.

transformers' MoE experts multiply each token's row by its expert's weights with a grouped GEMM. In bfloat16 that is
aten._grouped_mm, which Inductor's Triton template runs (platforms.check_grouped_mm). For other dtypes transformers
calls its own custom op instead, transformers::grouped_mm_fallback(input [S, K], weight [E, K, N], offs [E]) -> [S, N]:
rows offs[i-1] <= r < offs[i] (offs[-1] = 0) are input[r] @ weight[i], rows from offs[E-1] on are 0. Its kernel is a
Python loop over offs.tolist(), opaque to Inductor, so AOTInductor emits it as
aoti_torch_proxy_executor_call_function: libtorch's dispatcher, which no aotirt build has (the model was refused).

rewrite_grouped_mm_fallback replaces each such call, in place, by ATen ops Inductor lowers itself:

    gid[r]  = #{i : offs[i] <= r}                     the expert of row r (E for rows past the last group)
    y       = bmm(input expanded to [E, S, K], weight)  [E, S, N]: every row through every expert
    out[r]  = y[min(gid[r], E - 1), r] if gid[r] < E else 0

Same values as the loop (each row is one row-times-matrix product over K in the input's dtype), static shapes
only where the graph had them, no host sync, capturable. The cost: E times the GEMM work of the grouped product and an
[E, S, N] intermediate, where the fallback did one product per group. It is the path for non-bfloat16 experts
(float32 models, tests); bfloat16 MoE models take the grouped GEMM template and never reach it.
"""
from __future__ import annotations

from aotirt.errors import LoweringError
from aotirt.progress import log

FALLBACK_OP = "transformers::grouped_mm_fallback"


def _qualified_name(target) -> str:
    """'transformers::grouped_mm_fallback' for the op (and its edge-dialect wrapper), '' for anything else."""
    name = getattr(target, "_name", None) or getattr(getattr(target, "_op", None), "_name", None) or ""
    return name.split(".")[0] if isinstance(name, str) else ""


def fallback_nodes(graph) -> list:
    """The transformers::grouped_mm_fallback calls of an FX graph."""
    return [n for n in graph.nodes if n.op == "call_function" and _qualified_name(n.target) == FALLBACK_OP]


def _arguments(node) -> tuple:
    names = ("input", "weight", "offs")
    got = dict(zip(names, node.args))
    got.update({k: v for k, v in node.kwargs.items() if k in names})
    missing = [n for n in names if n not in got]
    if missing:
        raise LoweringError(f"{node.name}: {FALLBACK_OP} call without {', '.join(missing)}")
    return got["input"], got["weight"], got["offs"]


def rewrite_grouped_mm_fallback(torch, ep) -> int:
    """Rewrites, in place, each transformers::grouped_mm_fallback call of `ep` into the ATen ops of the module
    docstring. Returns how many were rewritten. A call whose operands are not a 2-D input, a 3-D weight and a 1-D
    integer offs of the weight's expert count (which the op's own fake function refuses too) raises LoweringError."""
    graph = ep.graph_module.graph
    nodes = fallback_nodes(graph)
    aten = torch.ops.aten
    checked = []  # every call is checked before any is rewritten: a refusal leaves the program as it was
    for node in nodes:
        x, w, offs = _arguments(node)
        xv, wv, ov = (getattr(a, "meta", {}).get("val") for a in (x, w, offs))
        if xv is None or wv is None or ov is None:
            raise LoweringError(f"{node.name}: {FALLBACK_OP} operands without recorded shapes")
        if xv.dim() != 2 or wv.dim() != 3 or ov.dim() != 1 or ov.dtype not in (torch.int32, torch.int64):
            raise LoweringError(f"{node.name}: {FALLBACK_OP} takes input [S, K], weight [E, K, N] and integer offs "
                             f"[E]; got {tuple(xv.shape)}, {tuple(wv.shape)}, {tuple(ov.shape)} {ov.dtype}")
        experts = wv.shape[0]
        if not isinstance(experts, int):
            raise LoweringError(f"{node.name}: {FALLBACK_OP} with a symbolic expert count ({experts}) is not lowered")
        if isinstance(ov.shape[0], int) and ov.shape[0] != experts:
            raise LoweringError(f"{node.name}: {FALLBACK_OP} takes one integer offs per expert: {experts} experts, "
                                f"{ov.shape[0]} offsets")
        checked.append((node, x, w, offs, xv, wv, ov, experts))
    for node, x, w, offs, xv, wv, ov, experts in checked:
        fake_mode = xv.fake_mode
        keep = {k: node.meta[k] for k in ("stack_trace", "nn_module_stack", "source_fn_stack") if k in node.meta}

        def emit(op, *args, **kwargs):
            def val(a):
                if isinstance(a, torch.fx.Node):
                    return a.meta["val"]
                if isinstance(a, (list, tuple)):
                    return type(a)(val(b) for b in a)
                return a
            n = graph.call_function(op, tuple(args), kwargs)
            with fake_mode:
                n.meta["val"] = op(*val(list(args)), **{k: val(v) for k, v in kwargs.items()})
            n.meta.update(keep)
            return n

        with graph.inserting_before(node):
            rows = xv.shape[0]
            rows_arg = rows if isinstance(rows, int) else emit(aten.sym_size.int, x, 0)
            k = xv.shape[1]
            k_arg = k if isinstance(k, int) else emit(aten.sym_size.int, x, 1)
            idx = emit(aten.arange.start, 0, rows_arg, dtype=torch.int64, device=xv.device, pin_memory=False)
            offs64 = offs if ov.dtype == torch.int64 else emit(aten._to_copy.default, offs, dtype=torch.int64)
            past = emit(aten.ge.Tensor, emit(aten.unsqueeze.default, idx, 1), emit(aten.unsqueeze.default, offs64, 0))
            gid = emit(aten.sum.dim_IntList, past, [1], False, dtype=torch.int64)
            valid = emit(aten.lt.Scalar, gid, experts)
            gidc = emit(aten.clamp.default, gid, None, experts - 1)
            xe = emit(aten.expand.default, emit(aten.unsqueeze.default, x, 0), [experts, rows_arg, k_arg])
            y = emit(aten.bmm.default, xe, w)
            sel = emit(aten.index.Tensor, y, [gidc, idx])
            out = emit(aten.where.ScalarOther, emit(aten.unsqueeze.default, valid, 1), sel, 0.0)
        node.replace_all_uses_with(out)
        graph.erase_node(node)
    if nodes:
        graph.lint()
        ep.graph_module.recompile()
        log.info("MoE experts: %d %s call(s) lowered as one batched GEMM over the experts each (no libtorch "
                 "fallback)", len(nodes), FALLBACK_OP)
    return len(nodes)
