"""SQL macros generated from the facts defined once in Python, for every gca connection.

The named queries read these facts through the macros, never as literals of their own:

* `wait_causes()`: a table of the wait causes (wait_causes.py) with their order:
  cause, cause_order (0 first), column_name (the replay's and jobs.csv's wait_<cause>_s),
  needs_user_caps;
* `wait_cause_columns()`: the list of those columns, in that order;
* `failure_category_order()`: the report's failure categories in their order
  (failure_categories.py), for ORDER BY list_position(...);
* `failure_label(has_log, reason, category)`: what the report calls a failed attempt's
  category (`category` the reason's or the attempt's reason): 'no log' without a log,
  'no cause in the log' when its log shows no failure.

configure_session (db/connect.py) creates them beside sql/session/macros.sql, and the
store's kept results count their text among the SQL they were computed with.
"""

from __future__ import annotations

from functools import cache

import duckdb

from gpucluster_analysis import failure_categories, wait_causes


def _literal(value: object) -> str:
    """A SQL literal of a str, bool or int defined in gca's own modules."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


def _list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_literal(v) for v in values) + "]"


@cache
def fact_macros_sql() -> tuple[str, ...]:
    """The CREATE MACRO statements, one per macro."""
    rows = ",\n        ".join(
        f"({_literal(c.name)}, {i}, {_literal(c.column)}, {_literal(c.needs_user_caps)})"
        for i, c in enumerate(wait_causes.CAUSES)
    )
    return (
        "CREATE OR REPLACE TEMP MACRO wait_causes() AS TABLE\n"
        f"    SELECT * FROM (VALUES\n        {rows}\n    ) AS causes(cause, cause_order, column_name, needs_user_caps)",
        f"CREATE OR REPLACE TEMP MACRO wait_cause_columns() AS {_list(wait_causes.COLUMNS)}",
        f"CREATE OR REPLACE TEMP MACRO failure_category_order() AS {_list(failure_categories.REPORT_ORDER)}",
        "CREATE OR REPLACE TEMP MACRO failure_label(has_log, reason, category) AS (\n"
        f"    CASE WHEN NOT has_log THEN {_literal(failure_categories.NO_LOG)}"
        f" WHEN reason = {_literal(failure_categories.NO_FAILURE_REASON)}"
        f" THEN {_literal(failure_categories.NO_CAUSE)} ELSE category END\n)",
    )


def create_fact_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create the macros on `con` (idempotent)."""
    for statement in fact_macros_sql():
        con.execute(statement)
