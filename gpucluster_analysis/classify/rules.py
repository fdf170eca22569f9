"""Failure signatures: load and strictly validate signatures.toml (and user files).

The category of a signature follows from its reason through `CATEGORIES`, the
failure taxonomy of docs/domain.md; the reason ids there must stay as they are.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpucluster_analysis.errors import RulesError

# reason -> category (docs/domain.md, "Failure taxonomy").
CATEGORIES: dict[str, str] = {
    "gpu_hw": "infrastructure",
    "node_fail": "infrastructure",
    "preempted": "infrastructure",
    "network_error": "infrastructure",
    "storage_io_error": "infrastructure",
    "disk_full": "infrastructure",
    "mpi_failure": "infrastructure",
    "nccl_error": "infrastructure",
    "cuda_oom": "framework",
    "host_oom": "framework",
    "cuda_driver": "framework",
    "cuda_illegal_access": "framework",
    "segfault": "framework",
    "launcher_failure": "framework",
    "import_error": "user",
    "syntax_error": "user",
    "key_error": "user",
    "attribute_error": "user",
    "index_error": "user",
    "type_error": "user",
    "value_error": "user",
    "assertion_error": "user",
    "shape_mismatch": "user",
    "python_exception": "user",
    "file_not_found": "user",
    "permission_denied": "user",
    "nan_loss": "user",
    "time_limit": "user",
    "user_kill": "user",
    "unknown": "unknown",
}

SHIPPED = "signatures.toml"
_KEYS = {"id", "reason", "pattern", "priority", "description", "examples", "counter_examples"}
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Signature:
    id: str
    reason: str
    pattern: str
    priority: int
    description: str
    examples: tuple[str, ...] = ()
    counter_examples: tuple[str, ...] = ()
    source: str = ""
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))

    @property
    def category(self) -> str:
        return CATEGORIES[self.reason]


def shipped_path() -> Path:
    """The signatures file that ships inside the package."""
    return Path(str(resources.files("gpucluster_analysis.classify").joinpath(SHIPPED)))


def parse_signatures(text: str, source: str) -> list[Signature]:
    """Parse and validate one signatures file; `source` names it in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RulesError(f"{source}: not valid TOML: {e}", "fix the syntax; patterns go in '...' literal strings") from None
    unknown_top = set(data) - {"signature"}
    if unknown_top:
        raise RulesError(f"{source}: unknown top-level key(s) {sorted(unknown_top)}", "only [[signature]] tables are allowed")
    tables = data.get("signature", [])
    if not isinstance(tables, list):
        raise RulesError(f"{source}: 'signature' must be an array of tables", "write each one as [[signature]]")
    out: list[Signature] = []
    seen: set[str] = set()
    for n, table in enumerate(tables, 1):
        out.append(_signature(table, n, source, seen))
    return out


def _signature(table: object, n: int, source: str, seen: set[str]) -> Signature:
    if not isinstance(table, dict):
        raise RulesError(f"{source}: signature #{n} is not a table")
    sid = table.get("id")
    where = f"{source}: signature {sid!r}" if isinstance(sid, str) else f"{source}: signature #{n}"
    unknown = set(table) - _KEYS
    if unknown:
        raise RulesError(f"{where}: unknown key(s) {sorted(unknown)}", f"allowed keys: {', '.join(sorted(_KEYS))}")
    missing = _KEYS - set(table)
    if missing:
        raise RulesError(f"{where}: missing key(s) {sorted(missing)}")
    for key in ("id", "reason", "pattern", "description"):
        if not isinstance(table[key], str) or not table[key]:
            raise RulesError(f"{where}: {key} must be a non-empty string")
    if not _ID.match(sid):  # type: ignore[arg-type]
        raise RulesError(f"{where}: id must be snake_case")
    if sid in seen:
        raise RulesError(f"{where}: duplicate id", "ids must be unique within a file")
    seen.add(sid)  # type: ignore[arg-type]
    if table["reason"] not in CATEGORIES or table["reason"] == "unknown":
        raise RulesError(f"{where}: unknown reason {table['reason']!r}", "use a reason id from the failure taxonomy")
    if not isinstance(table["priority"], int) or isinstance(table["priority"], bool):
        raise RulesError(f"{where}: priority must be an integer")
    for key in ("examples", "counter_examples"):
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise RulesError(f"{where}: {key} must be a list of strings")
    if not table["examples"]:
        raise RulesError(f"{where}: examples must not be empty")
    try:
        re.compile(table["pattern"])
    except re.error as e:
        raise RulesError(f"{where}: pattern does not compile: {e}") from None
    return Signature(
        id=sid, reason=table["reason"], pattern=table["pattern"], priority=table["priority"],  # type: ignore[arg-type]
        description=table["description"], examples=tuple(table["examples"]),
        counter_examples=tuple(table["counter_examples"]), source=source,
    )


def load_signatures(extra: list[Path] | None = None) -> list[Signature]:
    """The shipped signatures, then each extra file in order: a signature with a known id replaces it."""
    path = shipped_path()
    by_id = {s.id: s for s in parse_signatures(path.read_text(encoding="utf-8"), str(path))}
    for p in extra or []:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except OSError as e:
            raise RulesError(f"{p}: cannot read signatures file: {e.strerror or e}", "check the path") from None
        for s in parse_signatures(text, str(p)):
            by_id[s.id] = s
    return list(by_id.values())
