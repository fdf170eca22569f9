"""The rules a replay is run under: the locality rule and the VCs' GPU quotas.

`LocalityRule` says on how many machines a job of g GPUs may sit; `load_quotas` reads a
quotas file (`[quotas]` table of `vc = GPUs`). Quotas inferred from the store when no file
is given are the replay's business (`gpucluster_analysis.replay.timeline`).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gpucluster_analysis.errors import InputError


@dataclass(frozen=True)
class LocalityRule:
    """How many machines a gang may span: `default` ceil(g / m) with m the largest machine,
    `relaxed` any number, `at_most` a fixed number N."""

    kind: str  # default, relaxed, at_most
    machines: int | None = None  # N for at_most

    def max_machines(self, gpus: float, largest_machine: int, n_machines: int) -> int:
        if self.kind == "relaxed":
            return n_machines
        if self.kind == "at_most":
            assert self.machines is not None
            return self.machines
        return max(1, math.ceil(gpus / largest_machine - 1e-9)) if largest_machine > 0 else n_machines

    def describe(self) -> str:
        if self.kind == "relaxed":
            return "relaxed (a job may use free GPUs on any machines)"
        if self.kind == "at_most":
            return f"at most {self.machines} machine{'s' if self.machines != 1 else ''} per job"
        return "default (a job of g GPUs on at most ceil(g / m) machines, m the largest machine's GPUs)"


DEFAULT_LOCALITY = LocalityRule("default")


def parse_locality(text: str) -> LocalityRule:
    """`default`, `relaxed` or a whole number N >= 1 (at most N machines)."""
    value = text.strip().lower()
    if value in ("default", "strict"):
        return DEFAULT_LOCALITY
    if value in ("relaxed", "any"):
        return LocalityRule("relaxed")
    if value.isdigit() and int(value) >= 1:
        return LocalityRule("at_most", int(value))
    raise InputError(
        f"--locality {text!r} is not a locality rule",
        hint="use default, relaxed, or a number N of machines a job may span at most",
    )


@dataclass(frozen=True)
class Quotas:
    """VC -> GPUs, and the file they came from."""

    gpus: dict[str, float]
    path: Path


def load_quotas(path: Path) -> Quotas:
    """Read `[quotas]` vc = GPUs from a TOML file; any problem is a one-line InputError naming the file."""
    path = Path(path)
    hint = 'write a table [quotas] with one line per VC, e.g. "vc1" = 64'
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such quotas file", hint=hint) from None
    except OSError as e:
        raise InputError(f"{path}: cannot read the quotas file: {e.strerror or e}", hint=hint) from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: the quotas file is not UTF-8 text", hint=hint) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML: {e}", hint=hint) from None
    unknown = sorted(set(data) - {"quotas"})
    if unknown:
        raise InputError(f"{path}: unknown table or key {unknown[0]!r}", hint=hint)
    table = data.get("quotas")
    if not isinstance(table, dict):
        raise InputError(f"{path}: no [quotas] table", hint=hint)
    quotas: dict[str, float] = {}
    for vc, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise InputError(f"{path}: quota of VC {vc!r} is {value!r}, not a number of GPUs >= 0", hint=hint)
        quotas[str(vc)] = float(value)
    return Quotas(quotas, path)
