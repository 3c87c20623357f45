"""Whole-model CUDA graphs for a loaded package: capture one run after warm-up, replay it with new inputs.

    runner = aotirt.load("model.pt2")
    graphed = aotirt.capture(runner, x)      # x: an example input (shapes and dtypes are fixed from here on)
    y = graphed(x2)                          # copies x2 into the graph's static input, replays, returns outputs

Outputs alias the graph's static output buffers: the next call overwrites them (clone what you keep). A model that
cannot be captured raises aotirt.RunError and keeps running eagerly through `runner`.

Inputs: each call copies its inputs into the graph's static input buffers, on the GPU. With `alias_inputs=True` the
example inputs' own memory is the static input: a call with those same tensors (e.g. updated in place, as a KV cache
or a torch.cuda.graph user's static input) copies nothing, and a call with other tensors copies them into the
examples (overwriting them).

Streams and torch: without `stream=`, the graph is captured on a new torch stream that is ordered with torch's
current stream; that needs torch already imported (capture never imports it). A call with torch tensors on the
model's GPU and torch outputs then replays on torch's current stream (as torch.cuda.CUDAGraph.replay does): the
input copies and the graph are queued there, with no cross-stream events, and the outputs are the same tensor
objects every call. Pass `stream=<cudaStream_t int>` (e.g. cupy.cuda.Stream(non_blocking=True).ptr) to capture and
replay there without torch. Output types follow the runner's rule (aotirt.runtime: "auto", "torch", "dlpack";
`output=` here overrides the runner's default).
"""
from __future__ import annotations

from typing import Any

from aotirt import runtime
from aotirt.errors import InputError, RunError


class CapturedRunner:
    def __init__(self, runner: Any, *example_inputs: Any, warmup: int = 2, stream: Any = None,
                 output: str | None = None, alias_inputs: bool = False):
        self._output = runner.output if output is None else runtime._check_output(output)
        if self._output == "torch":
            runtime.import_torch_for_output()
        torch = runtime.imported_torch()  # never imported here (but for output="torch", asked above)
        if torch is None and stream is None:
            raise InputError("capturing without stream= needs torch already imported (it makes the capture stream); "
                             "pass stream=<cudaStream_t as int> (e.g. cupy.cuda.Stream(non_blocking=True).ptr)")
        self._runner = runner
        if stream is None:
            self._torch = torch
            self._stream_obj = torch.cuda.Stream(device=runner.device_index)
            stream_int = int(self._stream_obj.cuda_stream)
        else:
            self._torch = None
            self._stream_obj = None
            stream_int = int(stream)
        if stream_int == 0:
            raise InputError("CUDA graphs cannot be captured on the legacy default stream (0); pass another stream")
        self._stream_int = stream_int
        if len(example_inputs) != len(runner.input_names):
            raise InputError(f"the model takes {len(runner.input_names)} input(s), got {len(example_inputs)}")
        self._outputs_torch = None  # torch tensors aliasing the static outputs (the torch fast path's, made once)
        self._sync_in()
        capsules = [runner._capsule(i, x, stream_int) for i, x in enumerate(example_inputs)]
        try:
            self._graph = runtime._native().CapturedModel(runner._model, capsules, stream_int, warmup,
                                                          bool(alias_inputs))
        except RuntimeError as e:
            raise RunError(f"capturing {runner.package_path or 'the model'} into a CUDA graph failed: {e}") from e
        self._sync_out()

    def _sync_in(self):
        if self._stream_obj is not None:  # the capture stream waits for work queued on the caller's stream
            self._stream_obj.wait_stream(self._torch.cuda.current_stream(self._runner.device_index))

    def _sync_out(self):
        if self._stream_obj is not None:  # and the caller's stream waits for the replay
            self._torch.cuda.current_stream(self._runner.device_index).wait_stream(self._stream_obj)

    def _output_torch(self, output: str | None, inputs: list):
        return runtime._output_torch(self._output if output is None else runtime._check_output(output), inputs)

    @property
    def input_copies(self) -> int:
        """Input copies the replays made so far (an input that is its static buffer is not copied)."""
        return int(self._graph.input_copies)

    @property
    def graph_stats(self) -> dict:
        """What the captured graph holds, counted at capture: its nodes by type ("kernels", "mem_allocs",
        "mem_frees", "memsets", "memcpys", "other_nodes") and its capture pool ("pooled"; "pool_blocks",
        "pool_bytes", "pool_allocations", "pool_reuses"). With the pool (the default; AOTIRT_CAPTURE_POOL=0 at capture
        turns it off) the shims' allocations come from blocks made outside the graph, which then holds no memory
        nodes; without it each allocation is a memory node of the graph. "memsets_replaced": memset nodes the capture
        made (vendor libraries memset inside their calls), rewritten as fill kernels, which cost a kernel's time at
        each launch where a memset node costs ~9 us of host time (AOTIRT_GRAPH_MEMSET_KERNELS=0 at capture keeps
        them); they are counted in "kernels". "pool_retained": what the pool keeps alive for the graph until it is
        destroyed (the cuDNN shims' execution plans, one per cuDNN call captured), so that the graph holds no CUDA
        user object (cudnn-frontend's default way, which costs host time at each launch)."""
        return dict(self._graph.stats)

    def _replay_torch(self, torch: Any, inputs: list) -> list | None:
        """The lean path: torch tensors on the model's GPU, torch outputs, a capture stream torch made. One native call
        on torch's current stream (inputs exported without stream hand-offs: they were made on that stream, and the
        copies and the graph run there); the outputs are made once and returned every time. None where it does not
        apply (the general path then runs)."""
        if self._stream_obj is None:
            return None
        dev = self._runner.device_index
        for x in inputs:
            if not isinstance(x, torch.Tensor) or not x.is_cuda or x.get_device() != dev or x.requires_grad:
                return None
        stream = runtime._torch_stream(torch, dev)
        capsules = [torch.utils.dlpack.to_dlpack(x) for x in inputs]
        try:
            outs = self._graph.replay(capsules, stream, self._outputs_torch is None)
        except RuntimeError as e:
            raise RunError(f"graph replay failed: {e}") from e
        if self._outputs_torch is None:
            self._outputs_torch = [torch.from_dlpack(c) for c in outs]
        return list(self._outputs_torch)

    def run_list(self, inputs, output: str | None = None) -> list:
        inputs = list(inputs)
        torch = self._output_torch(output, inputs)  # validates output= before replaying
        if len(inputs) != len(self._runner.input_names):
            raise InputError(f"the model takes {len(self._runner.input_names)} input(s), got {len(inputs)}")
        if torch is not None:
            outs = self._replay_torch(torch, inputs)
            if outs is not None:
                return outs
        self._sync_in()
        capsules = [self._runner._capsule(i, x, self._stream_int) for i, x in enumerate(inputs)]
        try:
            outs = self._graph.replay(capsules)
        except RuntimeError as e:
            raise RunError(f"graph replay failed: {e}") from e
        self._sync_out()
        # DLPack outputs are ready on the caller's stream when torch made the capture stream (synced above), else on
        # the capture stream.
        ready_on = self._stream_int if self._stream_obj is None else runtime._current_stream(self._runner.device_index)
        return runtime._wrap_outputs(outs, torch, self._runner.device_index, ready_on)

    def __call__(self, *inputs: Any, output: str | None = None) -> Any:
        inputs_list = list(inputs)
        torch = self._output_torch(output, inputs_list)
        outputs = self.run_list(inputs_list, output="torch" if torch is not None else "dlpack")
        return self._runner._structure(outputs, torch)


def capture(runner: Any, *example_inputs: Any, warmup: int = 2, stream: Any = None,
            output: str | None = None, alias_inputs: bool = False) -> CapturedRunner:
    """Captures `runner` (from aotirt.load) into a CUDA graph; see the module docstring."""
    return CapturedRunner(runner, *example_inputs, warmup=warmup, stream=stream, output=output,
                          alias_inputs=alias_inputs)
