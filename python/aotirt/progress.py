"""Progress of the slow steps (autotuned compiles take minutes): the "aotirt" logger shown on stderr, a heartbeat."""
from __future__ import annotations

import logging
import sys
import threading
import time

log = logging.getLogger("aotirt")


def ensure_progress_visible() -> None:
    """Shows INFO progress on stderr unless logging is configured (called again, it adds no second handler)."""
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("aotirt: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)


class Heartbeat:
    """Logs 'still running' every `every` seconds while Inductor autotunes and builds (minutes, silently)."""

    def __init__(self, what: str, every: float = 30.0):
        self.what, self.every = what, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.perf_counter()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            log.info("%s: still running (%.0f s) ...", self.what, time.perf_counter() - self.t0)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
