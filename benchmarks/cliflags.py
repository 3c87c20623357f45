"""absl flags for the benchmark scripts (benchmarks/*.py), as the aotirt CLI uses them.

Each script defines its flags on a FlagValues of its own, made anew by each parse (so a default read from the
environment is read when parsing, and the scripts' flags never collide with each other's or aotirt.cli's in one
process). `Flags.parse(argv)` runs absl's parser (FLAGS(argv)) and returns an argparse-like Namespace whose
attributes are the flag names with '-' as '_' (--budget-s -> .budget_s). A usage error prints
`PROG: error: MESSAGE` to stderr and exits 2, --help / -h prints the flags and exits 0.

Flag types: absl's (string, integer, float, boolean: --quick / --noquick, enum) and `define(name, default, help,
parse)`: a flag whose text goes through `parse(text) -> value` (ValueError -> usage error with its message).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from absl import flags


class _FuncParser(flags.ArgumentParser):
    """absl parser calling a function on the flag's text; a non-string default is taken as already parsed."""

    def __init__(self, func: Callable[[str], Any], type_name: str = "string"):
        self._func, self._type_name = func, type_name

    def parse(self, argument):
        return self._func(argument) if isinstance(argument, str) else argument

    def flag_type(self) -> str:
        return self._type_name


class _Serializer(flags.ArgumentSerializer):
    def serialize(self, value) -> str:
        return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


class Flags:
    def __init__(self, prog: str, description: str = ""):
        self.prog, self.description = prog, description
        self.fv = flags.FlagValues()

    # ------------------------------------------------------------------------------------------ definitions
    def string(self, name: str, default: str | None, help: str) -> None:  # noqa: A002 (absl's word)
        flags.DEFINE_string(name, default, help, flag_values=self.fv)

    def integer(self, name: str, default: int | None, help: str) -> None:  # noqa: A002
        flags.DEFINE_integer(name, default, help, flag_values=self.fv)

    def float(self, name: str, default: float | None, help: str) -> None:  # noqa: A002
        flags.DEFINE_float(name, default, help, flag_values=self.fv)

    def boolean(self, name: str, default: bool, help: str) -> None:  # noqa: A002
        flags.DEFINE_boolean(name, default, help, flag_values=self.fv)

    def enum(self, name: str, default: str | None, values: tuple, help: str) -> None:  # noqa: A002
        # argparse's message for a bad choice was "invalid choice"; keep the words for users and tests.
        self.define(name, default, help, _choice(name, tuple(values)), "|".join(values))

    def define(self, name: str, default: Any, help: str, parse: Callable[[str], Any],  # noqa: A002
               type_name: str = "string") -> None:
        flags.DEFINE(_FuncParser(parse, type_name), name, default, help, flag_values=self.fv,
                     serializer=_Serializer())

    # ---------------------------------------------------------------------------------------------- parsing
    def error(self, message: str):
        print(f"usage: {self.prog} [flags] (--help lists them)\n{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    def help(self) -> str:
        return (f"usage: {self.prog} [flags]\n\n{self.description}\n\nflags:\n"
                + self.fv.module_help(self.fv.find_module_defining_flag(next(iter(self.fv)))) if len(self.fv)
                else self.description)

    def parse(self, argv: list | None = None) -> argparse.Namespace:
        argv = sys.argv[1:] if argv is None else list(argv)
        if any(a in ("-h", "--help", "-help", "--helpfull") for a in argv):
            print(self.help_text())
            raise SystemExit(0)
        self.fv.unparse_flags()  # back to the defaults: a second parse does not inherit the first one's values
        try:
            rest = self.fv([self.prog] + argv)
        except flags.Error as e:
            self.error(str(e))
        if len(rest) > 1:
            self.error(f"unrecognized arguments: {' '.join(rest[1:])}")
        return argparse.Namespace(**{name.replace("-", "_"): self.fv[name].value for name in self.fv})

    def help_text(self) -> str:
        lines = [f"usage: {self.prog} [flags]", "", self.description.strip(), "", "flags:"]
        for name in self.fv:
            f = self.fv[name]
            if f.help.startswith("(internal)"):
                continue
            head = f"  --[no]{name}" if f.boolean else f"  --{name}"
            lines.append(f"{head}: {f.help}")
            if not f.boolean or f.default:
                lines.append(f"    (default: {f.default_as_str})")
        return "\n".join(lines)


def _choice(name: str, values: tuple) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in values:
            raise ValueError(f"invalid choice: {text!r} (choose from {', '.join(map(repr, values))})")
        return text
    return parse


# ---------------------------------------------------------------------------- value parsers for Flags.define
def csv(text: str) -> tuple:
    """"a, b,,a" -> ("a", "b"): the non-empty items, first occurrence order."""
    return tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


def _number(text: str, kind: type, what: str):
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    v = _number(text, int, "an integer")
    if v < 1:
        raise ValueError(f"must be >= 1, got {v}")
    return v


def positive_float(text: str) -> float:
    v = _number(text, float, "a number")
    if not v > 0:
        raise ValueError(f"must be > 0, got {v}")
    return v


def nonnegative_float(text: str) -> float:
    v = _number(text, float, "a number")
    if v < 0:
        raise ValueError(f"must be >= 0, got {v}")
    return v
