"""One SQL source for both engines: a named query written for DuckDB, translated to Spark SQL.

SQLGlot (dialect duckdb -> spark) translates the syntax (`//`, `range`, `::`, `GROUP BY
ALL`, ...). Where the two engines *mean* different things by the same words, the rules
below rewrite the tree so that Spark computes what DuckDB computes, digit for digit:

* `epoch_us(t)` is Spark's `unix_micros(t)` (SQLGlot leaves it as is; the session runs in
  UTC, so Spark's naive timestamps convert as DuckDB's do).
* A cast of a computed number to an integer type rounds in DuckDB (half to even) and
  truncates in Spark: the operand is wrapped in `rint()`, Spark's half-to-even rounding.
* `sum` of integers is exact in DuckDB (128 bits) and overflows at 64 bits in Spark: a sum
  over a cast to an integer type sums DECIMAL(38,0) instead, as exact as DuckDB's.
* `/` is a DOUBLE in DuckDB whatever its operands; Spark divides a DECIMAL (`100.0 * n`,
  a DECIMAL sum) as a DECIMAL of its own scale: the dividend is cast to DOUBLE first, so
  both divide the same doubles.

A translated query takes no parameters (`$name`): Spark's are spelled and bound otherwise.

tests/test_spark.py runs the translated queries in Spark and compares with DuckDB.
"""

from __future__ import annotations

from functools import cache
from typing import TypeGuard

from gpucluster_analysis.sqlfiles import load_sql

_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def to_spark(sql: str) -> str:
    """The DuckDB query `sql` as Spark SQL (one statement); ValueError when it takes parameters."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="duckdb")
    if tree.find(exp.Parameter, exp.Placeholder):
        raise ValueError("a query with parameters is not translated")

    def integral(node: exp.Expression) -> TypeGuard[exp.Cast]:
        return isinstance(node, exp.Cast) and node.to.this.name in _INTEGER_TYPES

    def round_operand(cast: exp.Cast) -> None:
        # arithmetic may leave a fraction; a column, literal or function result is cast as is
        if isinstance(cast.this, exp.Add | exp.Sub | exp.Mul | exp.Div | exp.Mod):
            cast.set("this", exp.Anonymous(this="rint", expressions=[cast.this]))

    def rewrite(node: exp.Expression) -> exp.Expression:
        # the tree is walked from the top: a sum is seen before the cast inside it
        if isinstance(node, exp.Anonymous) and node.name.lower() == "epoch_us":
            return exp.Anonymous(this="unix_micros", expressions=node.expressions)
        if isinstance(node, exp.Sum) and integral(node.this):
            round_operand(node.this)
            node.this.set("to", exp.DataType.build("DECIMAL(38, 0)"))
        elif integral(node):
            round_operand(node)
        elif isinstance(node, exp.Div):
            node.set("this", exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE")))
        return node

    return tree.transform(rewrite).sql(dialect="spark", pretty=True)


def tables_read(sql: str) -> set[str]:
    """The tables and views the DuckDB query `sql` reads (its CTEs left out)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    return {table.name for table in tree.find_all(exp.Table)} - ctes


@cache
def named_query(name: str) -> str:
    """`sql/queries/<name>.sql` in Spark SQL."""
    return to_spark(load_sql("queries", name))
