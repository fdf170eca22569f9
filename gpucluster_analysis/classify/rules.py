"""Failure signatures and failure evidence: load and strictly validate signatures.toml (and user files).

A file holds `[[signature]]` tables (a pattern that names a root cause: its `reason`) and
`[[evidence]]` tables (a pattern that tells whether the log shows a failure at all, by its
`kind`: `failure`, `success`, `handled` or `note`; see EVIDENCE_KINDS). Both load as
`Signature` objects, the evidence ones with `kind` set and no reason.

The category of a signature follows from its reason through `CATEGORIES`, the
failure taxonomy of docs/domain.md (failure_categories.py).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpucluster_analysis.errors import RulesError
from gpucluster_analysis.failure_categories import CATEGORIES, SCHEDULER_ONLY_REASONS
from gpucluster_analysis.logline import NON_FATAL_LEVELS, normalize_line
from gpucluster_analysis.rule_tables import checked_keys
from gpucluster_analysis.textmatch import LinearPattern, compile_linear

# Reasons the classifier itself gives, never a signature: a failure no signature names, and no failure.
DERIVED_REASONS = ("unknown", "none")

CAUSE = "cause"  # the kind of a [[signature]] table: it names a root cause
# kind of an [[evidence]] table -> what a line it matches means
EVIDENCE_KINDS: dict[str, str] = {
    "failure": "the log shows a failure (a traceback, a non-zero exit, a fatal signal); "
    "unknown when no signature names it",
    "success": "the run finished or recovered here: what matched before this line does not count",
    "handled": "the traceback this line heads or sits in was caught and reported by the program: "
    "its lines do not count",
    "note": "a routine note that reads like a failure: neither a cause nor failure evidence",
}

SHIPPED = "signatures.toml"
_KEYS = {"id", "reason", "pattern", "priority", "examples"}
_OPTIONAL_KEYS = {"description", "counter_examples", "prefilter", "warning", "unless", "counts_at"}
_EVIDENCE_KEYS = {"id", "kind", "pattern", "examples"}
_EVIDENCE_OPTIONAL_KEYS = {"description", "counter_examples", "prefilter", "unless"}
_ID = re.compile(r"^[a-z][a-z0-9_]*$")

# `{EXC}` in a pattern stands for the start of an uncaught exception's line: optional
# module path (`torch.cuda.`), and the wrappers that put the type inside another line:
# Ray's `RayTaskError(KeyError)`, dask's `Exception: 'KeyError(...)'`, VS Code's
# `Exception has occurred: KeyError` (and its Chinese UI's `发生异常: KeyError`).
EXC = (
    r"^(?:Exception has occurred: |发生异常: ?|Exception: '|(?:[A-Za-z_]\w*\.)*Ray\w*Error\()?"
    r"(?:[A-Za-z_]\w*\.)*"
)


# eq=False: hashed by identity, as the per-log plan cache looks signatures up on every log
# (hashing every field of ~100 signatures per log was ~10% of classifying a small log)
@dataclass(frozen=True, eq=False)
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
    # CAUSE for a [[signature]]; an EVIDENCE_KINDS key for an [[evidence]] table (reason "")
    kind: str = CAUSE
    # a warning names its reason only in a log that shows a failure besides it
    warning: bool = False
    # a line the pattern matches does not count when this matches it too (RE2 has no lookahead)
    unless: str = ""
    # the levels below error at which its line still names a failure (NCCL's watchdog logs WARN)
    counts_at: tuple[str, ...] = ()
    # compiled by RE2 (textmatch.py): linear in the line, whatever the pattern
    regex: LinearPattern = field(init=False, repr=False, compare=False)
    unless_regex: LinearPattern | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"{self.source}: {'signature' if self.kind == CAUSE else 'evidence'} {self.id!r}"
        object.__setattr__(self, "regex", compile_linear(expand(self.pattern), where))
        object.__setattr__(
            self, "unless_regex", compile_linear(expand(self.unless), where, "unless") if self.unless else None
        )

    def matches(self, line: str) -> bool:
        """The pattern matches the (normalized) line and `unless` does not."""
        return self.matches_bytes(line.encode("utf-8", "surrogatepass"))

    def matches_bytes(self, data: bytes) -> bool:
        """`matches` for the line's UTF-8 bytes (encoded once for every signature tried on it)."""
        return self.regex.occurs_in(data) and (self.unless_regex is None or not self.unless_regex.occurs_in(data))

    @property
    def category(self) -> str:
        return CATEGORIES[self.reason] if self.kind == CAUSE else ""

    @property
    def names_exception(self) -> bool:
        """The pattern matches the line of an uncaught Python exception (it uses `{EXC}`)."""
        return "{EXC}" in self.pattern


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
        raise RulesError(
            f"{source}: not valid TOML: {e}", "fix the syntax; patterns go in '...' literal strings"
        ) from None
    unknown_top = set(data) - {"signature", "evidence"}
    if unknown_top:
        raise RulesError(
            f"{source}: unknown top-level key(s) {sorted(unknown_top)}",
            "only [[signature]] and [[evidence]] tables are allowed",
        )
    out: list[Signature] = []
    seen: set[str] = set()
    for key in ("signature", "evidence"):
        tables = data.get(key, [])
        if not isinstance(tables, list):
            raise RulesError(f"{source}: '{key}' must be an array of tables", f"write each one as [[{key}]]")
        for n, table in enumerate(tables, 1):
            out.append(_signature(table, n, source, seen) if key == "signature" else _evidence(table, n, source, seen))
    return out


def _checked_table(
    table: object, n: int, source: str, seen: set[str], noun: str, keys: set[str], optional: set[str]
) -> tuple[dict, str]:
    """The table with its optional keys defaulted, and how errors name it; checks keys, strings and the id."""
    table, where = checked_keys(table, n, source, noun, keys, optional)
    for key in sorted(keys & {"id", "reason", "kind", "pattern"}):
        if not isinstance(table[key], str) or not table[key]:
            raise RulesError(f"{where}: {key} must be a non-empty string")
    table = {"description": "", "counter_examples": [], "unless": "", **table}
    if not isinstance(table["description"], str):
        raise RulesError(f"{where}: description must be a string")
    if not isinstance(table["unless"], str):
        raise RulesError(f"{where}: unless must be a string (a pattern)")
    sid = table["id"]  # a non-empty string: checked above
    if not _ID.match(sid):
        raise RulesError(f"{where}: id must be snake_case")
    if sid in seen:
        raise RulesError(f"{where}: duplicate id", "ids must be unique within a file, signatures and evidence together")
    seen.add(sid)
    return table, where


def _evidence(table: object, n: int, source: str, seen: set[str]) -> Signature:
    table, where = _checked_table(table, n, source, seen, "evidence", _EVIDENCE_KEYS, _EVIDENCE_OPTIONAL_KEYS)
    if table["kind"] not in EVIDENCE_KINDS:
        raise RulesError(f"{where}: unknown kind {table['kind']!r}", f"use one of {', '.join(EVIDENCE_KINDS)}")
    literals = _checked_literals(table, where)
    return _checked_examples(
        Signature(
            id=table["id"],
            reason="",
            pattern=table["pattern"],
            priority=0,
            description=table["description"],
            examples=tuple(table["examples"]),
            counter_examples=tuple(table["counter_examples"]),
            source=source,
            prefilter=literals,
            kind=table["kind"],
            unless=table["unless"],
        ),
        where,
    )


def _signature(table: object, n: int, source: str, seen: set[str]) -> Signature:
    table, where = _checked_table(table, n, source, seen, "signature", _KEYS, _OPTIONAL_KEYS)
    if table["reason"] not in CATEGORIES or table["reason"] in (*DERIVED_REASONS, *SCHEDULER_ONLY_REASONS):
        raise RulesError(f"{where}: unknown reason {table['reason']!r}", "use a reason id from the failure taxonomy")
    if not isinstance(table["priority"], int) or isinstance(table["priority"], bool):
        raise RulesError(f"{where}: priority must be an integer")
    counts_at = table.get("counts_at", [])
    if not isinstance(counts_at, list) or not set(counts_at) <= set(NON_FATAL_LEVELS):
        raise RulesError(
            f"{where}: counts_at must list levels among {', '.join(NON_FATAL_LEVELS)}",
            "the levels below error at which a line of this signature still names a failure",
        )
    if not isinstance(table.get("warning", False), bool):
        raise RulesError(f"{where}: warning must be true or false")
    literals = _checked_literals(table, where)
    return _checked_examples(
        Signature(
            id=table["id"],
            reason=table["reason"],
            pattern=table["pattern"],
            priority=table["priority"],
            description=table["description"],
            examples=tuple(table["examples"]),
            counter_examples=tuple(table["counter_examples"]),
            source=source,
            prefilter=literals,
            warning=table.get("warning", False),
            unless=table["unless"],
            counts_at=tuple(counts_at),
        ),
        where,
    )


def _checked_literals(table: dict, where: str) -> tuple[str, ...]:
    """The lower-cased prefilter literals, once examples and counter-examples are lists of strings,
    there is an example, and every example holds a literal."""
    for key in ("examples", "counter_examples"):
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise RulesError(f"{where}: {key} must be a list of strings")
    if not table["examples"]:
        raise RulesError(f"{where}: examples must not be empty")
    prefilter = table.get("prefilter", [])
    if not isinstance(prefilter, list) or not all(isinstance(x, str) and x for x in prefilter):
        raise RulesError(f"{where}: prefilter must be a list of non-empty strings")
    literals = tuple(x.lower() for x in prefilter)
    for i, example in enumerate(table["examples"], 1):
        if literals and not any(lit in example.lower() for lit in literals):
            raise RulesError(
                f"{where}: example {i} contains none of the prefilter literals {list(prefilter)}",
                "every line the pattern can match must contain one of them; add a literal",
            )
    return literals


def _checked_examples(sig: Signature, where: str) -> Signature:
    """`sig` (its patterns compiled, so they run as the classifier runs them), once every example
    matches and no counter-example does."""
    for i, example in enumerate(sig.examples, 1):
        if not sig.matches(normalize_line(example)):
            raise RulesError(
                f"{where}: pattern does not match example {i} {example[:80]!r}", "fix the pattern or the example"
            )
    for i, counter in enumerate(sig.counter_examples, 1):
        if sig.matches(normalize_line(counter)):
            raise RulesError(
                f"{where}: pattern matches counter-example {i} {counter[:80]!r}",
                "fix the pattern or the counter-example",
            )
    return sig


def load_signatures(extra: list[Path] | None = None) -> list[Signature]:
    """The shipped signatures and evidence, then each extra file in order: an entry with a known id replaces it."""
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
