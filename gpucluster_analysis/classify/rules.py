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

from gpucluster_analysis.classify.noise import normalize_line
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
_KEYS = {"id", "reason", "pattern", "priority", "examples"}
_OPTIONAL_KEYS = {"description", "counter_examples", "prefilter"}
_ID = re.compile(r"^[a-z][a-z0-9_]*$")

# `{EXC}` in a pattern stands for the start of an uncaught exception's line: optional
# module path (`torch.cuda.`), and the wrappers that put the type inside another line:
# Ray's `RayTaskError(KeyError)`, dask's `Exception: 'KeyError(...)'`, VS Code's
# `Exception has occurred: KeyError` (and its Chinese UI's `发生异常: KeyError`).
EXC = (
    r"^(?:Exception has occurred: |发生异常: ?|Exception: '|(?:[A-Za-z_]\w*\.)*Ray\w*Error\()?"
    r"(?:[A-Za-z_]\w*\.)*"
)


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
    # Lower-case literals; a line can match only if it contains one of them. Empty:
    # the pattern is tried on every line (correct, but slow on big logs).
    prefilter: tuple[str, ...] = ()
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(expand(self.pattern)))

    @property
    def category(self) -> str:
        return CATEGORIES[self.reason]


def expand(pattern: str) -> str:
    """The pattern with `{EXC}` replaced by the exception-line head."""
    return pattern.replace("{EXC}", EXC)


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
    unknown = set(table) - _KEYS - _OPTIONAL_KEYS
    if unknown:
        raise RulesError(f"{where}: unknown key(s) {sorted(unknown)}", f"allowed keys: {', '.join(sorted(_KEYS | _OPTIONAL_KEYS))}")
    missing = _KEYS - set(table)
    if missing:
        raise RulesError(f"{where}: missing key(s) {sorted(missing)}")
    for key in ("id", "reason", "pattern"):
        if not isinstance(table[key], str) or not table[key]:
            raise RulesError(f"{where}: {key} must be a non-empty string")
    table = {"description": "", "counter_examples": [], **table}
    if not isinstance(table["description"], str):
        raise RulesError(f"{where}: description must be a string")
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
        regex = re.compile(expand(table["pattern"]))
    except re.error as e:
        raise RulesError(f"{where}: pattern does not compile: {e}") from None
    prefilter = table.get("prefilter", [])
    if not isinstance(prefilter, list) or not all(isinstance(x, str) and x for x in prefilter):
        raise RulesError(f"{where}: prefilter must be a list of non-empty strings")
    literals = tuple(x.lower() for x in prefilter)
    for i, example in enumerate(table["examples"], 1):
        if not regex.search(normalize_line(example)):
            raise RulesError(f"{where}: pattern does not match example {i} {example[:80]!r}", "fix the pattern or the example")
        if literals and not any(lit in example.lower() for lit in literals):
            raise RulesError(
                f"{where}: example {i} contains none of the prefilter literals {list(prefilter)}",
                "every line the pattern can match must contain one of them; add a literal",
            )
    for i, counter in enumerate(table["counter_examples"], 1):
        if regex.search(normalize_line(counter)):
            raise RulesError(f"{where}: pattern matches counter-example {i} {counter[:80]!r}", "fix the pattern or the counter-example")
    return Signature(
        id=sid, reason=table["reason"], pattern=table["pattern"], priority=table["priority"],  # type: ignore[arg-type]
        description=table["description"], examples=tuple(table["examples"]),
        counter_examples=tuple(table["counter_examples"]), source=source, prefilter=literals,
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
        except UnicodeDecodeError as e:
            raise RulesError(f"{p}: not UTF-8 text (byte {e.start})", "save the signatures file as UTF-8") from None
        for s in parse_signatures(text, str(p)):
            by_id[s.id] = s
    return list(by_id.values())
