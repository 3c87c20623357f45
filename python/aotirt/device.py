"""The one parser of device strings: "cuda" (the current device) or "cuda:N" (the aotirt runtime runs CUDA only)."""
from __future__ import annotations

from aotirt.errors import SpecError


def parse_device(device: str, field: str = "device") -> int | None:
    """'cuda' -> None (the current device), 'cuda:N' -> N; anything else is a SpecError naming `field`."""
    if isinstance(device, str):
        if device == "cuda":
            return None
        if device.startswith("cuda:") and device[5:].isdigit():
            return int(device[5:])
    raise SpecError(f"{field}={device!r} is not supported; valid: 'cuda' or 'cuda:N' (the aotirt runtime runs CUDA "
                    f"packages only)")


def device_index(device: str, torch=None, field: str = "device") -> int:
    """The device's index: N for 'cuda:N'; for 'cuda', torch's current device when this torch has a usable CUDA
    device, else 0."""
    index = parse_device(device, field)
    if index is not None:
        return index
    usable = torch is not None and getattr(torch.version, "cuda", None) and torch.cuda.is_available()
    return int(torch.cuda.current_device()) if usable else 0
