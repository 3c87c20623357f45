"""Where a benchmark result came from: the commit (the GPU bundle's COMMIT file, else git in this checkout)."""
from __future__ import annotations

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def commit() -> str:
    """The commit the measured code was built from: $AOTIRT_BUNDLE/COMMIT on the GPU machine (the bundle's build,
    which may differ from the checkout's HEAD), else `git rev-parse --short HEAD` here; "" when neither is known."""
    bundle = os.environ.get("AOTIRT_BUNDLE")
    if bundle:
        try:
            with open(os.path.join(bundle, "COMMIT")) as f:
                return f.read().strip()
        except OSError:
            pass
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=HERE).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
