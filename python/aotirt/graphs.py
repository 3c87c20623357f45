"""Whole-model CUDA graphs for a loaded package: capture one run after warm-up, replay it with new inputs.

    runner = aotirt.load("model.pt2")
    graphed = aotirt.capture(runner, x)      # x: an example input (shapes and dtypes are fixed from here on)
    y = graphed(x2)                          # copies x2 into the graph's static input, replays, returns outputs

Outputs alias the graph's static output buffers: the next call overwrites them (clone what you keep). A model that
cannot be captured raises aotirt.RunError and keeps running eagerly through `runner`.
"""
from __future__ import annotations

from typing import Any

from aotirt.errors import InputError, RunError


class CapturedRunner:
    def __init__(self, runner: Any, *example_inputs: Any, warmup: int = 2, stream: Any = None):
        torch = runner._torch
        if torch is None and stream is None:
            raise InputError("capturing needs torch (to make a capture stream) or an explicit stream=<cudaStream_t>")
        self._runner = runner
        self._torch = torch
        if stream is None:
            self._stream_obj = torch.cuda.Stream(device=runner.device_index)
            stream_int = int(self._stream_obj.cuda_stream)
        else:
            self._stream_obj = None
            stream_int = int(stream)
        if stream_int == 0:
            raise InputError("CUDA graphs cannot be captured on the legacy default stream (0); pass another stream")
        self._stream_int = stream_int
        if len(example_inputs) != len(runner.input_names):
            raise InputError(f"the model takes {len(runner.input_names)} input(s), got {len(example_inputs)}")
        self._sync_in()
        capsules = [runner._capsule(i, x, stream_int) for i, x in enumerate(example_inputs)]
        from aotirt.runtime import _native
        try:
            self._graph = _native().CapturedModel(runner._model, capsules, stream_int, warmup)
        except RuntimeError as e:
            raise RunError(f"capturing {runner.package_path or 'the model'} into a CUDA graph failed: {e}") from e
        self._sync_out()

    def _sync_in(self):
        if self._stream_obj is not None:  # the capture stream waits for work queued on the caller's stream
            self._stream_obj.wait_stream(self._torch.cuda.current_stream(self._runner.device_index))

    def _sync_out(self):
        if self._stream_obj is not None:  # and the caller's stream waits for the replay
            self._torch.cuda.current_stream(self._runner.device_index).wait_stream(self._stream_obj)

    def run_list(self, inputs) -> list:
        inputs = list(inputs)
        if len(inputs) != len(self._runner.input_names):
            raise InputError(f"the model takes {len(self._runner.input_names)} input(s), got {len(inputs)}")
        self._sync_in()
        capsules = [self._runner._capsule(i, x, self._stream_int) for i, x in enumerate(inputs)]
        try:
            outs = self._graph.replay(capsules)
        except RuntimeError as e:
            raise RunError(f"graph replay failed: {e}") from e
        self._sync_out()
        if self._torch is not None:
            return [self._torch.from_dlpack(c) for c in outs]
        from aotirt.runtime import DLPackTensor, KDL_CUDA
        return [DLPackTensor(c, (KDL_CUDA, self._runner.device_index)) for c in outs]

    def __call__(self, *inputs: Any) -> Any:
        outputs = self.run_list(inputs)
        spec = self._runner._out_treespec
        if spec is not None:
            return self._torch.utils._pytree.tree_unflatten(outputs, spec)
        return outputs


def capture(runner: Any, *example_inputs: Any, warmup: int = 2, stream: Any = None) -> CapturedRunner:
    """Captures `runner` (from aotirt.load) into a CUDA graph; see the module docstring."""
    return CapturedRunner(runner, *example_inputs, warmup=warmup, stream=stream)
