"""Whole-model CUDA graphs for a loaded package: capture one run after warm-up, replay it with new inputs.

    runner = aotirt.load("model.pt2")
    graphed = aotirt.capture(runner, x)      # x: an example input (shapes and dtypes are fixed from here on)
    y = graphed(x2)                          # copies x2 into the graph's static input, replays, returns outputs

Outputs alias the graph's static output buffers: the next call overwrites them (clone what you keep). A model that
cannot be captured raises aotirt.RunError and keeps running eagerly through `runner`.

Streams and torch: without `stream=`, the graph is captured on a new torch stream that is ordered with torch's
current stream; that needs torch already imported (capture never imports it). Pass `stream=<cudaStream_t int>`
(e.g. cupy.cuda.Stream(non_blocking=True).ptr) to capture and replay there without torch. Output types follow the
runner's rule (aotirt.runtime: "auto", "torch", "dlpack"; `output=` here overrides the runner's default).
"""
from __future__ import annotations

from typing import Any

from aotirt.errors import InputError, RunError


class CapturedRunner:
    def __init__(self, runner: Any, *example_inputs: Any, warmup: int = 2, stream: Any = None,
                 output: str | None = None):
        from aotirt import runtime
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
        self._sync_in()
        capsules = [runner._capsule(i, x, stream_int) for i, x in enumerate(example_inputs)]
        try:
            self._graph = runtime._native().CapturedModel(runner._model, capsules, stream_int, warmup)
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
        from aotirt import runtime
        return runtime._output_torch(self._output if output is None else runtime._check_output(output), inputs)

    def run_list(self, inputs, output: str | None = None) -> list:
        from aotirt import runtime
        inputs = list(inputs)
        torch = self._output_torch(output, inputs)  # validates output= before replaying
        if len(inputs) != len(self._runner.input_names):
            raise InputError(f"the model takes {len(self._runner.input_names)} input(s), got {len(inputs)}")
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
            output: str | None = None) -> CapturedRunner:
    """Captures `runner` (from aotirt.load) into a CUDA graph; see the module docstring."""
    return CapturedRunner(runner, *example_inputs, warmup=warmup, stream=stream, output=output)
