"""Find and load the SQL files that ship with gca.

SQL lives at the repository's top level in `sql/` and is packed into the wheel
as `gpucluster_analysis/sql/`; code refers to a file by its name, never a path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from gpucluster_analysis.errors import QueryError

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def sql_root() -> Path:
    """The `sql/` directory: inside the installed package, else the source checkout's."""
    for candidate in (_PACKAGE_DIR / "sql", _PACKAGE_DIR.parent / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise QueryError(
        f"gca's SQL files are missing (looked in {_PACKAGE_DIR / 'sql'})",
        hint="reinstall gca: pip install --force-reinstall gpucluster-analysis",
    )


@cache
def load_sql(group: str, name: str) -> str:
    """The text of `sql/<group>/<name>.sql`."""
    path = sql_root() / group / f"{name}.sql"
    if not path.is_file():
        raise QueryError(f"no SQL file named {group}/{name}.sql in {sql_root()}")
    return path.read_text(encoding="utf-8")


def list_sql(group: str) -> list[str]:
    """Names (without .sql) of the files in `sql/<group>/`, sorted."""
    return sorted(p.stem for p in (sql_root() / group).glob("*.sql"))


_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_STATEMENT_END = re.compile(r";[ \t]*(?:--[^\n]*)?\n")


def split_statements(script: str) -> list[str]:
    """Split a SQL script at semicolons that end a line (our files never put one inside a string)."""
    parts = _STATEMENT_END.split(script + "\n")
    return [p.strip() for p in parts if strip_comments(p).strip()]


def strip_comments(sql: str) -> str:
    """The SQL without its `--` comments (our files never put `--` inside a string)."""
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def parameter_names(sql: str) -> set[str]:
    """The named parameters ($name) a statement binds."""
    return set(_PARAM.findall(strip_comments(sql)))


def bind(statement: str, params: dict[str, Any]) -> dict[str, Any]:
    """The subset of `params` that `statement` names ($name); a missing one is a bug, said plainly."""
    names = parameter_names(statement)
    missing = names - params.keys()
    if missing:
        raise QueryError(f"SQL statement needs parameters {sorted(missing)} that were not given")
    return {k: params[k] for k in names}


def run_script(
    con: duckdb.DuckDBPyConnection,
    group: str,
    name: str,
    params: dict[str, Any],
    on_statement: Callable[[int, int], None] | None = None,
) -> None:
    """Run every statement of `sql/<group>/<name>.sql`, each with the parameters it names.

    `on_statement(i, n)` is called before statement i of n (for progress).
    """
    statements = split_statements(load_sql(group, name))
    for i, statement in enumerate(statements):
        if on_statement:
            on_statement(i, len(statements))
        con.execute(statement, bind(statement, params))
