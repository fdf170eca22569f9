"""What every rules file (classify/signatures.toml, speed/patterns.toml and a site's own) checks
first of each of its tables: that it is a table, has no key it does not know and every key it
needs; errors name the file and the table's id (or its number)."""

from __future__ import annotations

from typing import Any

from gpucluster_analysis.errors import RulesError


def checked_keys(
    table: object, n: int, source: str, noun: str, keys: set[str], optional: set[str]
) -> tuple[dict[str, Any], str]:
    """The table, and how errors name it (`<source>: <noun> 'id'`, else `<noun> #n`)."""
    if not isinstance(table, dict):
        raise RulesError(f"{source}: {noun} #{n} is not a table")
    tid = table.get("id")
    where = f"{source}: {noun} {tid!r}" if isinstance(tid, str) else f"{source}: {noun} #{n}"
    unknown = set(table) - keys - optional
    if unknown:
        raise RulesError(
            f"{where}: unknown key(s) {sorted(unknown)}", f"allowed keys: {', '.join(sorted(keys | optional))}"
        )
    missing = keys - set(table)
    if missing:
        raise RulesError(f"{where}: missing key(s) {sorted(missing)}")
    return table, where
