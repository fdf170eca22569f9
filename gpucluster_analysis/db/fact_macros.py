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

from gpucluster_analysis import failure_categories, scheduler_evidence, wait_causes


def _literal(value: object) -> str:
    """A SQL literal of a str, bool or int defined in gca's own modules."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


def _list(values: tuple[str, ...] | frozenset[str]) -> str:
    """A SQL list; a set's members sorted, so the macro's text is the same in every process."""
    ordered = sorted(values) if isinstance(values, frozenset) else values
    return "[" + ", ".join(_literal(v) for v in ordered) + "]"


def _map(pairs: dict[str, str] | dict[int, str]) -> str:
    return "MAP {" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in pairs.items()) + "}"


def _scheduler_macros() -> tuple[str, ...]:
    e = scheduler_evidence
    state_reason = f"{_map(e.STATE_REASONS)}[upper(split_part(state, ' ', 1))]"
    by_user = f"CASE WHEN cancelled_by = user_uid THEN {_literal(e.USER_CANCEL)} ELSE {_literal(e.ADMIN_CANCEL)} END"
    log, scheduler, both, none = e.EVIDENCE
    crashed = f"list_contains({list(sorted(e.SEGFAULT_SIGNALS))}, exit_signal)"
    return (
        "CREATE OR REPLACE TEMP MACRO signal_name(n) AS (\n"
        f"    CASE WHEN n <> 0 THEN coalesce({_map(e.SIGNALS)}[n], CAST(n AS VARCHAR)) END\n)",
        "CREATE OR REPLACE TEMP MACRO scheduler_reason(state, exit_code, exit_signal, cancelled_by, user_uid) AS (\n"
        f"    coalesce({state_reason}, CASE\n"
        f"         WHEN upper(split_part(state, ' ', 1)) = {_literal(e.CANCELLED)} THEN CASE\n"
        f"             WHEN cancelled_by = {_literal(e.ROOT_UID)} THEN {_literal(e.ADMIN_CANCEL)}\n"
        "             WHEN cancelled_by IS NOT NULL AND user_uid IS NOT NULL\n"
        f"                 THEN {by_user}\n"
        f"             ELSE {_literal(e.UNKNOWN_CANCEL)} END\n"
        f"         WHEN list_contains({_list(e.EXIT_STATES)}, upper(split_part(state, ' ', 1))) THEN CASE\n"
        f"             WHEN exit_signal = {e.SLURM_OOM_SIGNAL} THEN {_literal(e.STATE_REASONS['OUT_OF_MEMORY'])}\n"
        "             WHEN coalesce(exit_signal, 0) <> 0\n"
        f"                 THEN CASE WHEN {crashed} THEN {_literal(e.SEGFAULT)} ELSE {_literal(e.UNNAMED)} END\n"
        f"             WHEN coalesce(exit_code, 0) <> 0 THEN {_literal(e.UNNAMED)} END\n"
        "    END)\n)",
        "CREATE OR REPLACE TEMP MACRO job_failure_reason(log_reason, scheduler_reason) AS (\n"
        f"    CASE WHEN list_contains({_list(e.OVERRIDING)}, scheduler_reason)\n"
        f"              AND NOT coalesce(list_contains({_list(e.MORE_SPECIFIC_THAN_OVERRIDING)}, log_reason), false)\n"
        "             THEN scheduler_reason\n"
        f"         WHEN log_reason NOT IN ({_literal(e.UNNAMED)}, {_literal(e.NO_FAILURE)}) THEN log_reason\n"
        "         ELSE coalesce(scheduler_reason, log_reason) END\n)",
        "CREATE OR REPLACE TEMP MACRO failure_evidence(log_reason, scheduler_reason) AS (\n"
        f"    CASE WHEN coalesce(log_reason <> {_literal(e.NO_FAILURE)}, false)\n"
        f"         THEN CASE WHEN scheduler_reason IS NOT NULL THEN {_literal(both)} ELSE {_literal(log)} END\n"
        "         ELSE CASE WHEN scheduler_reason IS NOT NULL\n"
        f"                   THEN {_literal(scheduler)} ELSE {_literal(none)} END END\n)",
    )


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
        f"CREATE OR REPLACE TEMP MACRO reason_category(reason) AS ({_map(failure_categories.CATEGORIES)}[reason])",
        *_scheduler_macros(),
    )


def create_fact_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create the macros on `con` (idempotent)."""
    for statement in fact_macros_sql():
        con.execute(statement)
