"""Lowering one candidate: an nn.Module or ExportedProgram -> a .pt2 package the aotirt runtime loads (torch needed
here only). max_autotune_gemm_backends='AUTO' is not a candidate: aotirt.compile (aotirt.api) hands it to aotirt.auto,
which calls `compile` here once per candidate."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

from aotirt import moe, package, platforms
from aotirt.device import parse_device
from aotirt.errors import LoweringError, SpecError, UnsupportedShimError
from aotirt.progress import Heartbeat, ensure_progress_visible, log
from aotirt.return_types import name_return_types
from aotirt.specs import METADATA_KEY, CompileOptions, effective_options, inductor_options


def import_torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise LoweringError("aotirt.compile needs torch (with CUDA) to lower a model; install torch, or run on "
                            "the GPU machine where it is installed") from e
    return torch


def check_cuda_available(torch, target: str = "cuda") -> None:
    """Refuses (LoweringError) before any export when this torch cannot compile for the target GPU."""
    if target == "rocm":
        if not getattr(torch.version, "hip", None) or not torch.cuda.is_available():
            raise LoweringError(f"cannot lower for ROCm: torch {torch.__version__} is not a ROCm build with a "
                                f"visible AMD GPU; run the lowering on a ROCm machine, or use target=cuda")
        return
    if getattr(torch.version, "cuda", None) is None:
        raise LoweringError(
            f"cannot lower for CUDA: this torch ({torch.__version__}) is built without CUDA. Lowering generates and "
            f"autotunes CUDA kernels, so it needs a CUDA build of torch on a machine with an NVIDIA GPU: run "
            f"aotirt.compile there (the resulting .pt2 can then be copied and loaded anywhere the runtime runs)")
    if not torch.cuda.is_available():
        raise LoweringError(
            f"cannot lower for CUDA: torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU "
            f"(torch.cuda.is_available() is False). Run aotirt.compile on a machine with an NVIDIA GPU, and check "
            f"CUDA_VISIBLE_DEVICES and the driver (nvidia-smi)")


def _check_example_inputs(torch, example_inputs: Sequence[Any], device_index: int | None) -> None:
    flat, _ = torch.utils._pytree.tree_flatten(list(example_inputs))
    for i, x in enumerate(flat):
        if isinstance(x, torch.Tensor) and x.device.type != "cuda":
            raise LoweringError(
                f"example input {i} (shape {tuple(x.shape)}, {x.dtype}) is on {x.device}; the package is compiled "
                f"for the device of the example inputs, so pass CUDA tensors (x.cuda()) and keep the model on CUDA "
                f"too (model.cuda())")
        if isinstance(x, torch.Tensor) and device_index is not None and x.device.index != device_index:
            raise LoweringError(f"example input {i} is on {x.device} but device='cuda:{device_index}'; move it "
                                f"there or change device")


# attention_backend -> the SDPBackend names torch.export may use for scaled_dot_product_attention. MATH decomposes
# SDPA into matmuls + softmax; CUDNN leaves it to the fused kernels, which Inductor keeps as fallback calls to the
# shims platforms.SDPA_SHIMS (torch picks cuDNN, flash or memory-efficient per GPU, dtype and shape; no MATH among
# them, so SDPA is never decomposed silently: inputs none of them takes fail the lowering, see sdpa_failure_hint).
SDPA_BACKENDS = {
    "MATH": ("MATH",),
    "CUDNN": ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"),
    # TRITON rewrites the 4-D SDPA calls into aotirt::sdpa_triton before Inductor (triton_attention.replace_sdpa);
    # any other left is decomposed, as under MATH.
    "TRITON": ("MATH",),
    # CUDNN,TRITON: the calls the cuDNN shims cannot take become aotirt::sdpa_triton first (sdpa_nodes_for_triton);
    # the others are left to the fused kernels, as under CUDNN.
    "CUDNN,TRITON": ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"),
}


def sdpa_backends(torch, opts: CompileOptions) -> list:
    """The torch.nn.attention.SDPBackend members the lowering enables for opts.attention_backend."""
    from torch.nn.attention import SDPBackend

    if opts.attention_backend is None:
        opts = opts.resolved()  # the platform's default
    try:
        names = SDPA_BACKENDS[opts.attention_backend]
    except KeyError:
        raise SpecError(f"attention_backend={opts.attention_backend!r} is not valid; valid: "
                        f"{list(SDPA_BACKENDS)}") from None
    return [getattr(SDPBackend, n) for n in names]


def sdpa_context(torch, opts: CompileOptions):
    """sdpa_kernel(sdpa_backends(opts)): the SDPA backends export and compilation may use."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if opts.attention_backend is None:
        opts = opts.resolved()  # the platform's default
    backends = sdpa_backends(torch, opts)
    order = getattr(torch._C, "_get_sdp_priority_order", None)
    if opts.attention_backend == "CUDNN,TRITON" and order is not None:
        # The fused kernels in torch's own order, then MATH: an SDPA call our checks pass (the cuDNN shims take it)
        # but none of torch's fused kernels does (torch's rules can be stricter) is decomposed, not an export error.
        priority = list(order())
        backends = sorted(backends, key=lambda b: priority.index(int(b))) + [SDPBackend.MATH]
        return sdpa_kernel(backends, set_priority=True)
    return sdpa_kernel(backends)


def sdpa_failure_hint(opts: CompileOptions, e: BaseException) -> str:
    """What to change when SDPA found no kernel under attention_backend CUDNN (no MATH fallback there), else ''."""
    if opts.attention_backend in ("CUDNN", "CUDNN,TRITON") and "No available kernel" in str(e):
        return (f". With attention_backend={opts.attention_backend!r} an SDPA call that none of the fused kernels (cuDNN, flash, "
                "memory-efficient) takes for this GPU, dtype or shape has no kernel: use attention_backend='MATH' or "
                "'TRITON'")
    return ""


@contextlib.contextmanager
def lowering_context(torch, opts: CompileOptions, device_index: int | None):
    """No grad, SDPA as opts.attention_backend says (sdpa_context: MATH decomposes it, CUDNN keeps the fused SDPA
    ops as shim calls), the chosen fp32 matmul precision."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(opts.float32_matmul_precision)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            stack.enter_context(sdpa_context(torch, opts))
            if device_index is not None:
                stack.enter_context(torch.cuda.device(device_index))
            yield
    finally:
        torch.set_float32_matmul_precision(previous)


def sdpa_nodes_for_triton(torch, ep, opts: CompileOptions) -> list | None:
    """The aten.scaled_dot_product_attention nodes the Triton kernel runs: all (None) under TRITON, under
    CUDNN,TRITON those the cuDNN shims cannot take (platforms.attention_problems; check_attention has refused the
    ones neither takes), none otherwise."""
    if opts.attention_backend == "TRITON":
        return None
    if opts.attention_backend != "CUDNN,TRITON":
        return []
    nodes = []
    for node in ep.graph_module.graph.nodes:  # by name: ExecuTorch's edge programs hold edge ops, not aten's
        if node.op == "call_function" and platforms.op_name(node.target) == "scaled_dot_product_attention":
            call = platforms.attention_call("scaled_dot_product_attention", node)
            if call is not None and platforms.attention_problems(call, "CUDNN"):
                nodes.append(node)
    return nodes


def rewrite_attention(torch, ep, opts: CompileOptions) -> None:
    """The graph changes attention_backend needs before Inductor: MATH keeps SDPA outputs in their exported layouts
    (align_sdpa_layouts); TRITON and CUDNN,TRITON rewrite SDPA calls into the Triton kernel (aligned first)."""
    if opts.attention_backend == "MATH":
        align_sdpa_layouts(torch, ep)
        return
    nodes = sdpa_nodes_for_triton(torch, ep, opts)
    if nodes == []:
        return
    from aotirt import triton_attention

    align_sdpa_layouts(torch, ep, nodes)
    replaced, left = triton_attention.replace_sdpa(torch, ep, nodes)
    log.info("attention %s: %d SDPA call(s) run the Triton kernel%s", opts.attention_backend, replaced,
             f", {left} (not 4-D) decomposed as MATH" if left else "")


def align_sdpa_layouts(torch, ep, nodes: list | None = None) -> int:
    """Makes an ExportedProgram's SDPA outputs keep the layout it was exported with, whatever kernel the lowering
    picks. torch.export records each scaled_dot_product_attention's output strides from the backend it traced with
    (flash/memory-efficient/cuDNN: the query's layout, often [B, T, H, D] in memory), and code after it may rely on
    them: `y.transpose(1, 2).view(B, T, -1)`, or torch's multi_head_attention_forward, whose `.contiguous()` export
    drops when the tensor already is. Lowered with attention_backend MATH, SDPA is contiguous [B, H, T, D], and such a
    view fails ("Cannot view a tensor ... as a tensor with shape ..."; torchvision's vit_b_16 in the zoo). After each
    SDPA whose recorded output is not contiguous this inserts permute -> clone(contiguous) -> permute back, which gives
    exactly the recorded strides (Inductor fuses the copy into its neighbours; a no-op layout when they already agree).
    Changes the graph in place (the computation is the same); returns the number of SDPA calls realigned."""
    sdpa = torch.ops.aten.scaled_dot_product_attention.default
    graph = ep.graph_module.graph
    changed = 0
    only = None if nodes is None else set(nodes)
    for node in list(graph.nodes):
        if only is not None and node not in only:
            continue
        is_sdpa = node.op == "call_function" and (node.target == sdpa or only is not None)
        val = node.meta.get("val") if is_sdpa else None
        if not isinstance(val, torch.Tensor) or val.is_contiguous():
            continue
        strides = list(val.stride())
        if any(not isinstance(x, int) for x in strides) or len(set(strides)) != len(strides):
            continue  # symbolic or ambiguous (size-1 dims sharing a stride): leave it to Inductor
        order = sorted(range(val.dim()), key=lambda d: -strides[d])  # outermost first: the memory order
        inverse = [order.index(d) for d in range(val.dim())]
        # an output keeps its name (the graph signature's); a permute of ours means this SDPA is realigned already
        users = [u for u in node.users if u.op != "output" and not u.meta.get("aotirt_sdpa_align")]
        if not users:
            continue
        with graph.inserting_after(node):
            perm = graph.call_function(torch.ops.aten.permute.default, (node, order))
        with graph.inserting_after(perm):
            packed = graph.call_function(torch.ops.aten.clone.default, (perm,),
                                         {"memory_format": torch.contiguous_format})
        with graph.inserting_after(packed):
            back = graph.call_function(torch.ops.aten.permute.default, (packed, inverse))
        perm.meta["aotirt_sdpa_align"] = True
        perm.meta["val"] = val.permute(order)
        packed.meta["val"] = perm.meta["val"].clone(memory_format=torch.contiguous_format)
        back.meta["val"] = packed.meta["val"].permute(inverse)
        for meta in (perm.meta, packed.meta, back.meta):
            for key in ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node"):
                if key in node.meta:
                    meta[key] = node.meta[key]
        for u in users:
            u.replace_input_with(node, back)
        changed += 1
    if changed:
        ep.graph_module.recompile()
        log.info("realigned %d SDPA output(s) to the layout the program was exported with", changed)
    return changed


# c10 dtype codes (what the shims and the runtime use).
_C10_CODES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6, "float64": 7,
              "complex64": 9, "complex128": 10, "bool": 11, "bfloat16": 15}


def user_input_values(ep) -> list:
    """(name, meta["val"]) of each user input placeholder of an ExportedProgram, in the program's order."""
    user_inputs = set(ep.graph_signature.user_inputs)
    return [(n.name, n.meta.get("val")) for n in ep.graph.nodes if n.op == "placeholder" and n.name in user_inputs]


def input_specs_json(torch, ep) -> str:
    """JSON list of {dtype, shape, strides} per user input (-1 for symbolic sizes/strides), recorded in the package
    metadata as "aotirt_inputs": the generated code trusts its inputs, so the runtime checks them against this."""
    specs = []
    for _, val in user_input_values(ep):
        if not isinstance(val, torch.Tensor):
            specs.append({"dtype": -1, "shape": [], "strides": []})
            continue
        as_int = lambda v: int(v) if isinstance(v, int) else -1  # noqa: E731 (SymInt -> dynamic)
        specs.append({"dtype": _C10_CODES.get(str(val.dtype).replace("torch.", ""), -1),
                      "shape": [as_int(d) for d in val.shape], "strides": [as_int(d) for d in val.stride()]})
    return json.dumps(specs)


def scratch_for_the_grid(lines: list) -> list:
    """Triton's global/profile scratch (device-side TMA descriptors: the grouped-GEMM template's USE_TMA_LOAD, the
    persistent TMA matmuls) is per CTA: the kernel writes at pid * size. torch 2.11's C++ wrapper sizes the buffer for
    one CTA, so every other CTA writes past it (an illegal address on our runtime; silent corruption inside a caching
    allocator's block); torch 2.13 allocates size * grid. Given the C++ lines of an older cpp_scratch, this returns
    them sized as the newer ones are (lines already sized by the grid, and the null pointer of a kernel that needs no
    scratch, come back as they are). A first line of another
    form raises LoweringError: leaving it as it is would compile the out-of-bounds writes in silently."""
    if not lines or "grid_0" in lines[0]:
        return lines
    if len(lines) == 1 and re.fullmatch(r"\s*CUdeviceptr \w+ = 0;\s*", lines[0]):
        return lines  # the kernel needs no scratch (torch passes a null pointer): nothing to size
    first, n = re.subn(r"^(\s*int64_t \w+_size\[\] = \{)(.+)(\};\s*)$",
                       r"\1static_cast<int64_t>(\2) * grid_0 * grid_1 * grid_2\3", lines[0])
    if n != 1:
        raise LoweringError(f"cannot size this torch's Triton scratch for its kernel's grid: unexpected wrapper line "
                            f"{lines[0]!r} (aotirt knows torch 2.11's and 2.13's form)")
    return [first] + list(lines[1:])


@contextlib.contextmanager
def collect_shim_calls(key: str, manifest: platforms.Manifest | None = None) -> Iterator[set]:
    """Records every shim the generated wrapper calls while Inductor compiles, and refuses (UnsupportedShimError,
    all missing names sorted) as soon as the wrapper source exists, before the C++ build.

    Hooks, as ExecuTorch's aoti_backend.py does: CppWrapperCpu's extern-kernel (C shim) calls and runtime-lookup
    fallbacks (those go through aoti_torch_proxy_executor_call_function, which no aotirt build has), and
    AotCodeCompiler.compile, whose wrapper source is scanned for every aoti_torch_* call.
    """
    from torch._inductor.codecache import AotCodeCompiler
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    called: set = set()
    proxied: set = set()  # the ops that have no C shim (Inductor calls them through the proxy executor)
    originals = {}

    def patch(owner, name, make):
        if name in owner.__dict__:
            originals[(owner, name)] = owner.__dict__[name]
            setattr(owner, name, make(getattr(owner, name)))
        else:
            log.debug("aotirt: %s.%s not found; relying on the package scan", owner.__name__, name)

    def extern_call(orig):
        # Inductor passes the op's C++ name (e.g. at::_ops::_scaled_dot_product_cudnn_attention::call) or a shim
        # name; the wrapper calls get_c_shim_func_name's translation of it (aoti_torch_<device>_<op>).
        def hooked(self, kernel, *args, **kwargs):
            device = kwargs.get("device", args[1] if len(args) > 1 else "cuda")
            try:
                called.add(self.get_c_shim_func_name(kernel, device))
            except Exception:  # an Inductor without the translation: the wrapper-source scan still sees the call
                called.add(kernel)
            return orig(self, kernel, *args, **kwargs)
        return hooked

    def runtime_lookup(orig):
        def hooked(self, op_overload, *args, **kwargs):
            called.add("aoti_torch_proxy_executor_call_function")
            proxied.add(str(getattr(op_overload, "_name", op_overload)))
            log.info("op %s has no C shim; Inductor calls it through the proxy executor",
                     getattr(op_overload, "_name", op_overload))
            return orig(self, op_overload, *args, **kwargs)
        return hooked

    def aot_code_compile(orig):
        def hooked(*args, **kwargs):
            src = kwargs.get("wrapper_code", args[1] if len(args) > 1 else "")
            called.update(platforms.shims_called(src if isinstance(src, str) else ""))
            try:
                platforms.check_shims(called, key, manifest)  # before the (slow) C++ build of the wrapper
            except UnsupportedShimError as e:
                if not proxied:
                    raise
                raise UnsupportedShimError(
                    f"{e} (aoti_torch_proxy_executor_call_function runs ops that have no C shim through libtorch's "
                    f"dispatcher, which no aotirt build has; this model's: {', '.join(sorted(proxied))})",
                    e.shims) from None
            return orig(*args, **kwargs)
        return classmethod(lambda cls, *a, **k: hooked(*a, **k))

    def triton_for_grouped_mm(orig):
        # the grouped-GEMM lowering asks for its Triton template as if TRITON were among the GEMM backends
        def hooked(*args, **kwargs):
            backends = inductor_config.max_autotune_gemm_backends
            if "TRITON" in backends.upper().split(","):
                return orig(*args, **kwargs)
            with inductor_config.patch(max_autotune_gemm_backends=f"{backends},TRITON"):
                return orig(*args, **kwargs)
        return hooked

    def scratch_for_every_cta(orig):
        def hooked(self, *args, **kwargs):
            out = orig(self, *args, **kwargs)
            return out if out is None else (scratch_for_the_grid(out[0]), out[1])
        return hooked

    try:
        from torch._inductor.codegen.cuda.device_op_overrides import CUDADeviceOpOverrides
    except ImportError:
        CUDADeviceOpOverrides = None
    if CUDADeviceOpOverrides is not None:
        for name in ("cpp_scratch", "cpp_global_scratch"):
            if name in CUDADeviceOpOverrides.__dict__:
                patch(CUDADeviceOpOverrides, name, scratch_for_every_cta)
    if platforms.GROUPED_MM_SHIM not in platforms.supported_shims(key, manifest):
        # Inductor's grouped-GEMM lowering offers its ATen fallback whenever ATEN is among the GEMM backends and its
        # Triton template only when TRITON is; no build has the fallback's shim, so the template is always offered
        # and the fallback never (platforms.check_grouped_mm refused what the template cannot take)
        from torch._inductor import config as inductor_config
        from torch._inductor.kernel import mm_grouped
        patch(mm_grouped, "use_aten_gemm_kernels", lambda orig: lambda: False)
        patch(mm_grouped, "use_triton_template", triton_for_grouped_mm)
    patch(CppWrapperCpu, "generate_c_shim_extern_kernel_call", extern_call)
    patch(CppWrapperCpu, "generate_fallback_kernel_with_runtime_lookup_aot", runtime_lookup)
    patch(AotCodeCompiler, "compile", aot_code_compile)
    try:
        yield called
    finally:
        for (owner, name), value in originals.items():
            setattr(owner, name, value)


def compile_failure(e: BaseException, what: str) -> LoweringError:
    """Inductor's exception as a LoweringError, with what to change where we know it."""
    msg = f"{what} failed: {type(e).__name__}: {e}"
    if "NoValidChoicesError" in msg and "grouped_mm" in msg:
        msg = (f"{what} failed: Inductor found no kernel choice for a grouped GEMM (aten._grouped_mm; "
               f"NoValidChoicesError). Its Triton template, the only choice aotirt can run (no build has the ATen "
               f"fallback's shim {platforms.GROUPED_MM_SHIM}), takes static shapes with no zero-sized dimension: "
               f"export the MoE layer with static shapes. Inductor said: {type(e).__name__}: {e}")
    elif "NoValidChoicesError" in msg:
        msg = (f"{what} failed: Inductor found no kernel choice for a GEMM or convolution (NoValidChoicesError). "
               f"With max_autotune_gemm_backends='TRITON' this happens where Triton templates are off (GPUs with "
               f"fewer than 68 SMs, some dtypes): use max_autotune_gemm_backends='ATEN,TRITON' (linux_cuda only). "
               f"Inductor said: {type(e).__name__}: {e}")
    elif "No available kernel" in msg:  # SDPA with no enabled backend: only without MATH (CUDNN, CUDNN,TRITON)
        msg += (". SDPA found no kernel among the enabled backends: with attention_backend 'CUDNN' or "
                "'CUDNN,TRITON' (cuDNN, flash, memory-efficient only) use attention_backend='MATH' or 'TRITON'")
    return LoweringError(msg)


def shim_error_in(e: BaseException) -> UnsupportedShimError | None:
    """Our refusal raised inside Inductor may come back wrapped; find it in the cause/context chain."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, UnsupportedShimError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def inductor_build(key: str, what: str, build: Callable[[], Any]) -> tuple:
    """Runs `build` (an AOTInductor compile) under the shim hooks (collect_shim_calls) and the progress heartbeat.
    Our refusal raised inside Inductor comes out as itself, any other failure as compile_failure(e, what).
    Returns (what build returned, the shims the generated code calls)."""
    with collect_shim_calls(key) as called, Heartbeat("AOTInductor autotune/compile"):
        try:
            out = build()
        except Exception as e:
            refusal = shim_error_in(e)
            if refusal is not None:
                raise refusal from None
            raise compile_failure(e, what) from e
    return out, called


def check_package_shims(package_path: str, key: str, manifest: platforms.Manifest | None = None,
                        also: set | None = None) -> set:
    """Scans a .pt2's wrapper source for aoti_torch_* calls; refuses any the platform lacks. Returns the calls."""
    called = set(also or ()) | platforms.shims_called(package.wrapper_source(package_path))
    platforms.check_shims(called, key, manifest, what=f"package {os.path.basename(package_path)}")
    return called


def preflight(torch, ep, opts: CompileOptions, key: str, target: str, device_index: int | None,
              check_gpu: bool = True) -> platforms.ModelFeatures:
    """The refusals that need the graph (and the lowering GPU), before Inductor starts."""
    features = platforms.model_features(ep.graph)
    platforms.check_model(opts, features, key)
    platforms.check_attention(opts, features)
    if check_gpu:
        platforms.check_gpu(opts, platforms.gpu_properties(device_index), target, features)
    return features


def compile(model_or_exported_program: Any, example_inputs: Sequence[Any], package_path: str | None = None, *,
            device: str = "cuda", options: CompileOptions | None = None,
            inductor_configs: Mapping[str, Any] | None = None, dynamic_shapes: Any = None) -> str:
    """Exports (if given an nn.Module) and compiles a model with AOTInductor into a .pt2 for the aotirt runtime.

    example_inputs: a tuple of positional inputs (a single tensor is accepted too), on the CUDA device.
    package_path: where to write the package (must end in .pt2); None writes it into a new temporary folder.
    options: aotirt.CompileOptions; inductor_configs: extra Inductor options (see specs.inductor_options).
    Returns the absolute path of the written .pt2. Raises SpecError, LoweringError (UnsupportedPlatformError,
    UnsupportedShimError, SmallGpuError) before the slow steps wherever the problem can be known then.
    """
    opts = effective_options(options, inductor_configs)
    device_index = parse_device(device)
    package_path = package.check_path(package_path)
    torch = import_torch()
    target = opts.resolved_target()
    opts = opts.resolved(target)  # the platform's defaults for the fields left None
    configs = inductor_options(opts, inductor_configs, target=target)  # validate everything before slow steps
    key = opts.platform_key(target)
    if opts.platform == "windows" and not opts.shim_library_path:
        raise SpecError("platform=windows links the wrapper against aoti_cuda_shims.lib: build it with `bazel build "
                        "//platform/windows:aoti_cuda_shims.lib` and pass shim_library_path=<the folder holding it>")
    check_cuda_available(torch, target)

    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    _check_example_inputs(torch, example_inputs, device_index)
    ensure_progress_visible()
    name_return_types(torch)  # a model returning torch.sort(x) & co.: AOTInductor serializes its out_spec

    with lowering_context(torch, opts, device_index):
        if isinstance(model_or_exported_program, torch.export.ExportedProgram):
            ep = model_or_exported_program
            log.info("using the given ExportedProgram")
        elif isinstance(model_or_exported_program, torch.nn.Module):
            log.info("exporting %s with torch.export ...", type(model_or_exported_program).__name__)
            t0 = time.perf_counter()
            try:
                ep = torch.export.export(model_or_exported_program, example_inputs, dynamic_shapes=dynamic_shapes)
            except Exception as e:  # torch raises many types here; keep the original as the cause
                raise LoweringError(f"torch.export failed for {type(model_or_exported_program).__name__}: "
                                    f"{type(e).__name__}: {e}{sdpa_failure_hint(opts, e)}") from e
            log.info("exported in %.1f s (%d graph nodes)", time.perf_counter() - t0, len(ep.graph.nodes))
        else:
            raise LoweringError(f"aotirt.compile takes a torch.nn.Module or torch.export.ExportedProgram, got "
                                f"{type(model_or_exported_program).__name__}")
        moe.rewrite_grouped_mm_fallback(torch, ep)  # transformers' non-bf16 experts: no libtorch fallback
        preflight(torch, ep, opts, key, target, device_index)
        rewrite_attention(torch, ep, opts)

        configs = dict(configs)
        configs[METADATA_KEY] = {**configs.get(METADATA_KEY, {}), "aotirt_inputs": input_specs_json(torch, ep)}
        # Compile into a fresh folder and move the package into place only once every check passed.
        final = os.path.abspath(package_path) if package_path is not None else None
        if final is not None:
            os.makedirs(os.path.dirname(final), exist_ok=True)
        workdir = tempfile.mkdtemp(prefix="aotirt_lower_", dir=os.path.dirname(final) if final else None)
        staged = os.path.join(workdir, os.path.basename(final) if final else "model.pt2")
        log.info("compiling for %s with AOTInductor (max_autotune=%s, gemm backends %s, attention %s); this can take "
                 "minutes ...", key, "ON" if opts.max_autotune else "OFF", opts.max_autotune_gemm_backends,
                 opts.attention_backend)
        t0 = time.perf_counter()
        keep_workdir = False
        try:
            path, called = inductor_build(
                key, "AOTInductor compilation",
                lambda: torch._inductor.aoti_compile_and_package(ep, package_path=staged, inductor_configs=configs))
            check_package_shims(path, key, also=called)  # the wrapper source as packaged, in case a hook missed
            if final is None:
                final, keep_workdir = os.path.abspath(path), True
            else:
                os.replace(path, final)
        finally:
            if not keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)
    size_mb = os.path.getsize(final) / 2**20 if os.path.exists(final) else float("nan")
    log.info("wrote %s (%.1f MiB) in %.1f s", final, size_mb, time.perf_counter() - t0)
    return final
