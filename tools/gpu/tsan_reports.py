"""Classifies the ThreadSanitizer reports in a test log (run.sh's tsan suite, for a binary that exited 66).

    python tools/gpu/tsan_reports.py LOG

Prints one line: how many reports, how many of them are KNOWN ones. Exit 0 when the log has at least one report and
every one is known (the caller then counts the binary by its test results alone), 1 when any report is not known,
2 when the log has no report it can parse (exit 66 without one: keep the failure).

A known report names one vendor-library behaviour exactly, stack by stack, so that nothing of ours can match it:

  libcublasLt-exit-unlock  "unlock of an unlocked mutex (or by a wrong thread)" whose stack is exactly
                           pthread_mutex_unlock <- cxa_at_exit_wrapper (an exit handler that *is* the unlock: no
                           frame of any other function between them), on a mutex created by libcublasLt.so.13 itself
                           (the frame under pthread_mutex_init is in that library). libcublasLt locks it in its
                           initializer (a call from an uninstrumented library, ignored by called_from_lib) on
                           whichever thread loaded it and unlocks it at exit on the main thread. A TSan suppression
                           cannot name it: `mutex:libcublasLt.so.13` matches the report's location, but TSan takes a
                           location match as a suppression only at a non-zero global address, and libcublasLt's
                           stripped global has none (seen on the H200 at 9bc4bc0: the suppression did not apply).
A bad unlock in any exit handler of ours has that handler's frame between the two, and a mutex of ours is created
under a frame of ours: both stay reports.
"""
from __future__ import annotations

import re
import sys

HEADER = re.compile(r"^WARNING: ThreadSanitizer: (.+?) \(pid=\d+\)\s*$")
FRAME = re.compile(r"^\s+#(\d+) (<null>|[^\s(]+).*\(([^()\s]+?)\+0x[0-9a-f]+\)\s*$")  # function up to "(" or a space
SEPARATOR = "=================="


def reports(text: str) -> list:
    """[{kind, stacks: [[(function, module), ...], ...], blocks: [title line of each stack]}] per report."""
    out, cur, stack, title = [], None, None, ""
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            cur = {"kind": m.group(1), "stacks": [], "titles": []}
            out.append(cur)
            stack, title = None, "report"
            continue
        if cur is None:
            continue
        if line.startswith(SEPARATOR) or line.startswith("SUMMARY: ThreadSanitizer"):
            cur, stack = None, None
            continue
        f = FRAME.match(line)
        if f:
            if stack is None or int(f.group(1)) == 0:
                stack = []
                cur["stacks"].append(stack)
                cur["titles"].append(title)
            module = f.group(3).rsplit("/", 1)[-1]
            stack.append((f.group(2), module))
            continue
        if line.strip():
            title, stack = line.strip(), None
    return out


def libcublaslt_exit_unlock(r: dict) -> bool:
    if not r["kind"].startswith("unlock of an unlocked mutex") or not r["stacks"]:
        return False
    first = [fn for fn, _ in r["stacks"][0]]
    if first != ["pthread_mutex_unlock", "cxa_at_exit_wrapper"]:
        return False
    for title, stack in zip(r["titles"], r["stacks"]):
        if title.startswith("Mutex ") and "created at" in title:
            return (len(stack) >= 2 and stack[0][0] == "pthread_mutex_init"
                    and stack[1][1].startswith("libcublasLt.so"))
    return False


KNOWN = {"libcublasLt-exit-unlock": libcublaslt_exit_unlock}


def classify(text: str) -> tuple:
    """(number of reports, {known name: count}, number not known)."""
    rs = reports(text)
    known, unknown = {}, 0
    for r in rs:
        name = next((n for n, pred in KNOWN.items() if pred(r)), None)
        if name is None:
            unknown += 1
        else:
            known[name] = known.get(name, 0) + 1
    return len(rs), known, unknown


def main(argv: list) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    with open(argv[1], errors="replace") as f:
        n, known, unknown = classify(f.read())
    names = ", ".join(f"{k} x{v}" for k, v in sorted(known.items())) or "none"
    print(f"{n} TSan report(s): {n - unknown} known ({names}), {unknown} not known")
    if n == 0:
        return 2
    return 0 if unknown == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
