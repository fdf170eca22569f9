"""Speed patterns: load and strictly validate patterns.toml.

A pattern turns one kind of log line into a speed in a canonical metric where higher
is faster (see the header of patterns.toml for every key). The loader rejects unknown
keys, duplicate ids, regexes that do not compile or lack the groups their kind needs, a
priority outside its metric's band, examples that do not give their value, lines the
prefilter would hide, and counter-examples that give a sample; each error names the
file and the pattern id.
"""

from __future__ import annotations

import math
import re
import tomllib
from importlib import resources
from pathlib import Path

from gpucluster_analysis.errors import RulesError
from gpucluster_analysis.rule_tables import checked_keys
from gpucluster_analysis.speed.keys import pattern_table
from gpucluster_analysis.speed.pattern import CONVERSIONS, KINDS, METRICS, Example, SpeedPattern
from gpucluster_analysis.speed.reading import line_values

SHIPPED = "patterns.toml"

_KEYS = {"id", "framework", "metric", "unit", "per_gpu", "kind", "priority", "regex", "prefilter", "example"}
_OPTIONAL = {
    "convert", "convert_by_unit", "description", "counter_example", "unless", "min_samples", "fallback", "running_mean",
}  # fmt: skip
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def shipped_path() -> Path:
    """The patterns file that ships inside the package."""
    return Path(str(resources.files("gpucluster_analysis.speed").joinpath(SHIPPED)))


def load_patterns(path: Path | None = None) -> list[SpeedPattern]:
    """The shipped patterns (or those of `path`), validated, in file order."""
    path = Path(path) if path is not None else shipped_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RulesError(f"{path}: cannot read speed patterns: {e.strerror or e}", "check the path") from None
    return parse_patterns(text, str(path))


def parse_patterns(text: str, source: str) -> list[SpeedPattern]:
    """Parse and validate one patterns file; `source` names it in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RulesError(
            f"{source}: not valid TOML: {e}", "fix the syntax; regexes go in '...' literal strings"
        ) from None
    if set(data) - {"pattern", "key"}:
        raise RulesError(
            f"{source}: unknown top-level key(s) {sorted(set(data) - {'pattern', 'key'})}",
            "only [[pattern]] and [[key]] tables are allowed",
        )
    tables, keys = data.get("pattern", []), data.get("key", [])
    if not isinstance(tables, list) or not isinstance(keys, list):
        raise RulesError(
            f"{source}: 'pattern' and 'key' must be arrays of tables", "write each one as [[pattern]] or [[key]]"
        )
    tables = [*tables, *(pattern_table(t, n, source) for n, t in enumerate(keys, 1))]
    out: list[SpeedPattern] = []
    seen: set[str] = set()
    for n, table in enumerate(tables, 1):
        pattern = _pattern(table, n, source)
        if pattern.id in seen:
            raise RulesError(f"{source}: pattern {pattern.id!r}: duplicate id", "ids must be unique")
        seen.add(pattern.id)
        out.append(pattern)
    return out


def _pattern(table: object, n: int, source: str) -> SpeedPattern:
    table, where = checked_keys(table, n, source, "pattern", _KEYS, _OPTIONAL)
    for key in ("id", "framework", "metric", "unit", "kind", "regex"):
        if not isinstance(table[key], str) or not table[key]:
            raise RulesError(f"{where}: {key} must be a non-empty string")
    if not _ID.match(table["id"]):
        raise RulesError(f"{where}: id must be snake_case")
    if table["metric"] not in METRICS:
        raise RulesError(f"{where}: unknown metric {table['metric']!r}", f"use one of {', '.join(METRICS)}")
    if table["kind"] not in KINDS:
        raise RulesError(f"{where}: unknown kind {table['kind']!r}", f"use one of {', '.join(KINDS)}")
    if not isinstance(table["per_gpu"], bool):
        raise RulesError(f"{where}: per_gpu must be true or false")
    priority = table["priority"]
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise RulesError(f"{where}: priority must be an integer")
    band = METRICS[table["metric"]][1]
    if priority // 100 != band:
        raise RulesError(
            f"{where}: priority {priority} is outside the {table['metric']} band {band}00-{band}99",
            "the hundreds digit says the metric: 5 tflops, 3 tokens, 2 samples, 1 iterations",
        )
    unless = table.get("unless", "")
    if not isinstance(unless, str):
        raise RulesError(f"{where}: unless must be a string (a regex)")
    groups = set(_compiled(table["regex"], where, "regex").groupindex)
    _compiled(unless, where, "unless")
    if "value" not in groups:
        raise RulesError(f"{where}: regex has no (?P<value>...) group")
    if table["kind"] == "bar" and not {"desc", "total", "elapsed"} <= groups:
        raise RulesError(f"{where}: a bar pattern's regex needs the groups desc, total and elapsed")
    convert, by_unit = table.get("convert"), table.get("convert_by_unit")
    if "unit" in groups:
        if convert is not None or not isinstance(by_unit, dict) or not by_unit:
            raise RulesError(
                f"{where}: a regex with a unit group takes convert_by_unit (printed unit -> conversion), not convert"
            )
        if any(v not in CONVERSIONS for v in by_unit.values()):
            raise RulesError(f"{where}: convert_by_unit values must be one of {', '.join(CONVERSIONS)}")
    elif convert not in CONVERSIONS or by_unit is not None:
        raise RulesError(
            f"{where}: convert must be one of {', '.join(CONVERSIONS)}", "convert_by_unit needs a (?P<unit>...) group"
        )
    prefilter = table["prefilter"]
    if not isinstance(prefilter, list) or not prefilter or not all(isinstance(x, str) and x for x in prefilter):
        raise RulesError(f"{where}: prefilter must be a non-empty list of non-empty strings")
    if any(x != x.lower() for x in prefilter):
        raise RulesError(f"{where}: prefilter literals must be lower case")
    for flag in ("fallback", "running_mean"):
        if not isinstance(table.get(flag, False), bool):
            raise RulesError(f"{where}: {flag} must be true or false")
    min_samples = table.get("min_samples", 1)
    if not isinstance(min_samples, int) or isinstance(min_samples, bool) or min_samples < 1:
        raise RulesError(f"{where}: min_samples must be a whole number, 1 or more")
    description = table.get("description", "")
    if not isinstance(description, str):
        raise RulesError(f"{where}: description must be a string")
    examples = _examples(table["example"], where, "example", with_value=True)
    counters = _examples(table.get("counter_example", []), where, "counter_example", with_value=False)
    if not examples:
        raise RulesError(f"{where}: needs at least one [[pattern.example]]")
    pattern = SpeedPattern(
        id=table["id"],
        framework=table["framework"],
        metric=table["metric"],
        unit=table["unit"],
        per_gpu=table["per_gpu"],
        kind=table["kind"],
        priority=priority,
        regex_text=table["regex"],
        prefilter=tuple(prefilter),
        convert=convert,
        convert_by_unit=tuple(sorted(by_unit.items())) if by_unit else (),
        description=description,
        examples=examples,
        counter_examples=counters,
        unless_text=unless,
        source=source,
        min_samples=min_samples,
        fallback=table.get("fallback") is True,
        running_mean=table.get("running_mean") is True,
    )
    _check_examples(pattern, where)
    return pattern


def _compiled(text: str, where: str, key: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as e:
        raise RulesError(f"{where}: {key} does not compile: {e}") from None


def _examples(value: object, where: str, key: str, *, with_value: bool) -> tuple[Example, ...]:
    if not isinstance(value, list):
        raise RulesError(f"{where}: {key} must be an array of tables ([[pattern.{key}]])")
    out = []
    allowed = {"line", "value", "source"} if with_value else {"line", "source"}
    for i, ex in enumerate(value, 1):
        if not isinstance(ex, dict) or set(ex) != allowed:
            raise RulesError(f"{where}: {key} {i} must have exactly the keys {sorted(allowed)}")
        if not isinstance(ex["line"], str) or not isinstance(ex["source"], str) or not ex["source"]:
            raise RulesError(f"{where}: {key} {i}: line and source must be strings")
        number = ex.get("value")
        if with_value and (not isinstance(number, (int, float)) or isinstance(number, bool)):
            raise RulesError(f"{where}: {key} {i}: value must be a number")
        out.append(Example(ex["line"], float(number) if with_value else None, ex["source"]))  # type: ignore[arg-type]  # number: checked above
    return tuple(out)


def _check_examples(pattern: SpeedPattern, where: str) -> None:
    for i, ex in enumerate(pattern.examples, 1):
        if not any(lit in ex.line.lower() for lit in pattern.prefilter):
            raise RulesError(
                f"{where}: example {i} holds none of the prefilter literals {list(pattern.prefilter)}",
                "every line the regex can match must contain one of them",
            )
        got = line_values(pattern, ex.line)
        # rel_tol: the examples' values are written to 7-8 digits
        if len(got) != 1 or not math.isclose(got[0], ex.value, rel_tol=1e-6):  # type: ignore[arg-type]  # examples have values here
            raise RulesError(
                f"{where}: example {i} gives {got}, expected [{ex.value}]: {ex.line[:80]!r}",
                "fix the regex, the conversion or the expected value",
            )
    for i, ex in enumerate(pattern.counter_examples, 1):
        got = line_values(pattern, ex.line)
        if got:
            raise RulesError(
                f"{where}: counter-example {i} gives {got}: {ex.line[:80]!r}", "fix the regex or the counter-example"
            )
