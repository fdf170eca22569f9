"""Build the report: store -> named queries -> sections -> one offline index.html + CSV tables.

`build_report(db, out, log)` opens the store read-only, has analyze/ compute what the report
shows (analyze/compute.py: the temp tables, one pass over the GPU samples, the named queries),
composes the sections, writes `jobs.csv` and one CSV per figure or table, and `index.html`: a
single self-contained file with plotly.js inlined once, no network reference, every figure
drawn from a fixed div id. The output directory is locked while the report is built, and the
files are written to a new directory that then replaces it whole (report/directory.py): a
reader never sees a half-written report, and a killed one leaves the previous report as it was.
"""

from __future__ import annotations

import html
import importlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpucluster_analysis import __version__
from gpucluster_analysis.analyze.compute import check_store, compute, open_input, step
from gpucluster_analysis.analyze.prepare import Engine, format_for_csv
from gpucluster_analysis.analyze.selection import EVERY_JOB, Selection
from gpucluster_analysis.errors import ReportError
from gpucluster_analysis.printable import printable
from gpucluster_analysis.replay.rules import DEFAULT_LOCALITY, LocalityRule, Quotas
from gpucluster_analysis.report import comparison, sections, summary
from gpucluster_analysis.report.directory import ReportDirectory
from gpucluster_analysis.report.figure_style import page_template
from gpucluster_analysis.report.sections.blocks import Figure, Findings, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import fmt_dur

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class Written:
    """What build_report wrote, and its headline numbers (report.summary.headline; docs/summary.md)."""

    html: Path
    tables: list[Path]
    out_dir: Path
    summary: dict[str, Any] = field(default_factory=dict)


def build_report(
    db: Path,
    out: Path,
    log: Callable[[str], None] = lambda _msg: None,
    quotas: Quotas | None = None,
    locality: LocalityRule = DEFAULT_LOCALITY,
    selection: Selection = EVERY_JOB,
    baseline: Selection | None = None,
    dataset: Path | None = None,
    engine: str = "duckdb",
    master: str | None = None,
    raw_csv: bool = False,
) -> Written:
    """Write `out/index.html` and the CSV tables (jobs.csv first) for the store at `db`.

    The queueing replay runs under `quotas` (VC -> GPUs; inferred from the store when None)
    and the `locality` rule. The report covers the jobs of `selection` (analyze/selection.py);
    with a `baseline` selection it also sets the two side by side (report/comparison.py,
    comparison.csv). With `dataset`, a Parquet dataset directory (gca export, gca ingest --to),
    the report reads that instead of the store `db`; with `engine` "spark" too, the heavy
    queries run in Spark (`master`: its URL, default PySpark's own local mode). Text cells that
    a spreadsheet would run as formulas are neutralized in the CSVs (csv_text) unless `raw_csv`.

    Raises StoreError when the store is missing or holds no jobs, ReportError when `out`
    cannot be written.
    """
    db, out = Path(db), Path(out)
    if out.exists() and not out.is_dir():
        raise ReportError(f"{out}: exists and is not a directory", hint="pass --out a directory")
    _check_engine(engine, dataset, master)
    # locked before any work, so that a second report into `out` is refused at once
    with ReportDirectory(out) as directory:
        return _build(db, out, directory, log, quotas, locality, selection, baseline, dataset, engine, master, raw_csv)


def _build(
    db: Path,
    out: Path,
    directory: ReportDirectory,
    log: Callable[[str], None],
    quotas: Quotas | None,
    locality: LocalityRule,
    selection: Selection,
    baseline: Selection | None,
    dataset: Path | None,
    engine: str,
    master: str | None,
    raw_csv: bool,
) -> Written:
    started = time.perf_counter()
    # scipy.stats (half a second to import) is first needed after the replay: imported in a
    # thread while DuckDB builds the first tables, off the way (the import lock makes a use
    # before it is done wait for it)
    threading.Thread(target=importlib.import_module, args=("scipy.stats",), daemon=True).start()
    with open_input(db, dataset, log) as con, _heavy_engine(engine, dataset, master, log) as heavy:
        check_store(con, db if dataset is None else dataset)
        # stdout is for data: no progress bars from long queries
        con.execute("SET enable_progress_bar = false")
        before = None
        if baseline is not None:
            log(f"baseline: {baseline.describe()}")
            before = compute(con, log, quotas, locality, baseline, heavy)
            log(f"compared period: {selection.describe()}")
        now = compute(con, log, quotas, locality, selection, heavy)
    results = now.results
    if before is not None:
        results["comparison"] = comparison.compare(before, now)
    name = (db if dataset is None else dataset).name
    content = sections.compose(
        results, now.tests, name, selection.describe(), None if baseline is None else baseline.describe()
    )
    with step(log, "writing HTML and CSV"):
        page = render_html(content, title=f"GPU cluster report: {name}")
        tables = _write_outputs(directory, now.jobs, results, page, raw_csv=raw_csv)
    log(f"report built in {time.perf_counter() - started:.1f} s")
    headline = summary.headline(results, name, out / "index.html", selection.describe())
    if before is not None:
        headline["comparison"] = summary.comparison(results["comparison"], baseline.describe())  # type: ignore[union-attr]  # baseline: set if before is
    return Written(html=out / "index.html", tables=tables, out_dir=out, summary=headline)


def _check_engine(engine: str, dataset: Path | None, master: str | None) -> None:
    """Refuse an engine that cannot run, before anything is read."""
    if engine == "duckdb":
        if master is not None:
            raise ReportError("--master is the Spark master's URL", hint="pass it with --engine spark")
        return
    if engine != "spark":
        raise ReportError(f"--engine {engine}: not an engine gca knows", hint="pass --engine duckdb or --engine spark")
    from gpucluster_analysis import spark

    spark.require()
    if dataset is None:
        raise ReportError(
            "--engine spark reads a Parquet dataset", hint="pass --from DIR (gca export --db STORE --to DIR writes one)"
        )


@contextmanager
def _heavy_engine(
    engine: str, dataset: Path | None, master: str | None, log: Callable[[str], None]
) -> Iterator[Engine | None]:
    """The engine of the heavy queries (None: DuckDB runs them all), for as long as the report runs."""
    if engine == "duckdb" or dataset is None:
        yield None
        return
    from gpucluster_analysis.dataset.layout import read_dataset
    from gpucluster_analysis.spark.engine import SparkEngine

    with SparkEngine(dataset, read_dataset(Path(dataset).resolve()), master, log) as session:
        yield session


# ---------------------------------------------------------------- files


# Floats are written with this many significant digits: enough for any measure gca reports,
# few enough that the last bits of a float computed in another order never show.
CSV_SIGNIFICANT_DIGITS = 12


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP, "CSV Injection"):
# such a text cell gets a leading single quote, which makes it text, and double quotes.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
# Text cells quoted: RFC 4180's (a comma, a double quote, a line break; an empty string, to tell
# it from a missing value) and those holding a semicolon or a tab, where spreadsheets in some
# locales split a line.
_QUOTED_CHARS = (",", '"', "\r", "\n", ";", "\t")


def csv_text(df: pl.DataFrame, raw: bool = False) -> str:
    """CSV with ISO 8601 Z times, plain decimals (never 1e-05) rounded to
    CSV_SIGNIFICANT_DIGITS significant digits, empty missing values.

    Text columns (names from the input: jobs, users, VCs, machines, reasons) are made safe for
    spreadsheets: a cell starting with one of FORMULA_STARTS is written as "'..." (OWASP's rule).
    Numbers are never touched, a negative one included. With `raw`, text as it is.
    """
    if not raw:
        df = _spreadsheet_text(df)
    df = format_for_csv(df)
    floats = [c for c, t in df.schema.items() if t.is_float()]
    if floats:
        df = df.with_columns(pl.col(c).round_sig_figs(CSV_SIGNIFICANT_DIGITS) for c in floats)
    # _spreadsheet_text quoted the text cells that need it; the other columns (numbers, times,
    # booleans) never need quotes
    return df.write_csv(float_scientific=False, null_value="", quote_style="necessary" if raw else "never")


def _spreadsheet_text(df: pl.DataFrame) -> pl.DataFrame:
    """The text columns as CSV fields a spreadsheet reads as text: quoted where needed
    (_QUOTED_CHARS), a formula cell with a leading single quote and always quoted."""
    text = [c for c, t in df.schema.items() if t in (pl.String, pl.Categorical) or isinstance(t, pl.Enum)]
    if not text:
        return df
    starts = "^[" + "".join(FORMULA_STARTS).replace("-", r"\-") + "]"  # the others are literal in a class

    def quote_when(col: pl.Expr) -> pl.Expr:
        return col.str.contains(starts) | col.str.contains_any(list(_QUOTED_CHARS)) | (col.str.len_bytes() == 0)

    # one pass to find the columns with a cell to change, then only those are rewritten
    found = df.select(quote_when(pl.col(c).cast(pl.String)).any().alias(c) for c in text).row(0, named=True)
    rewritten = []
    for name in (c for c in text if found[c]):
        col = pl.col(name).cast(pl.String)
        formula = pl.when(col.str.contains(starts)).then(pl.lit("'")).otherwise(pl.lit(""))
        quoted = pl.concat_str([pl.lit('"'), formula, col.str.replace_all('"', '""', literal=True), pl.lit('"')])
        rewritten.append(pl.when(quote_when(col)).then(quoted).otherwise(col).alias(name))
    return df.with_columns(rewritten) if rewritten else df


def _write_outputs(
    directory: ReportDirectory, jobs: pl.DataFrame, results: dict[str, pl.DataFrame], page: str, raw_csv: bool = False
) -> list[Path]:
    """jobs.csv, a CSV per result and index.html, put in place of the previous report whole
    (report/directory.py); the CSVs' paths."""
    tables = ["jobs.csv", *(f"{name}.csv" for name in results)]

    def write(folder: Path) -> list[str]:
        (folder / "jobs.csv").write_text(csv_text(jobs, raw=raw_csv), encoding="utf-8")
        for name, df in results.items():
            (folder / f"{name}.csv").write_text(csv_text(df, raw=raw_csv), encoding="utf-8")
        # index.html last: when it is there, the tables it links to are too
        (folder / "index.html").write_text(page, encoding="utf-8")
        return [*tables, "index.html"]

    directory.publish(write)
    return [directory.shown / name for name in tables]


# ---------------------------------------------------------------- HTML

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #222;
       background: #fafafa; line-height: 1.45; }
header { background: #1f3b57; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; }
header p { margin: 0; opacity: 0.85; font-size: 13px; }
nav { background: #fff; border-bottom: 1px solid #ddd; padding: 8px 32px; position: sticky; top: 0; z-index: 10; }
nav a { margin-right: 18px; color: #1f3b57; text-decoration: none; font-weight: 600; font-size: 14px; }
main { max-width: 1180px; margin: 0 auto; padding: 8px 32px 48px 32px; }
section { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 6px 24px 18px 24px;
          margin: 22px 0; }
h2 { color: #1f3b57; border-bottom: 2px solid #e8eef4; padding-bottom: 6px; }
h3 { color: #1f3b57; margin-top: 28px; }
.figure { margin: 18px 0 26px 0; }
.plot { width: 100%; }
p.finding { background: #f2f7fb; border-left: 4px solid #2c7fb8; padding: 8px 12px; margin: 6px 0; }
p.note { background: #fff8e6; border-left: 4px solid #e0a800; padding: 8px 12px; }
p.source { font-size: 12px; color: #666; margin: 2px 0 0 0; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f0f3f6; white-space: normal; }
td.text { text-align: left; white-space: normal; max-width: 520px; overflow-wrap: break-word; }
.table-wrap { overflow-x: auto; }
ul.key-findings { margin: 6px 0 4px 0; padding-left: 20px; }
ul.key-findings li { margin: 5px 0; }
p.caption { font-size: 13.5px; margin: 18px 0 4px 0; }
th { text-align: left; }
"""


def _html(text: str) -> str:
    """Text for the page: printable (a name's control characters as escapes), then HTML-escaped."""
    return html.escape(printable(text))


def render_html(content: list[Section], title: str) -> str:
    """One self-contained page: plotly.js once in <head>, then every section and figure."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<a href="#{_html(s.id)}">{_html(s.title)}</a>' for s in content)
    body: list[str] = []
    for s in content:
        body.append(f'<section id="{_html(s.id)}"><h2>{_html(s.title)}</h2>')
        for block in s.blocks:
            if isinstance(block, Figure):
                # the figure as drawn, with the page's template (made without one: figure_style.new_figure)
                drawn = block.figure.to_plotly_json()
                drawn["layout"] = {**drawn["layout"], "template": page_template()}
                div = pio.to_html(
                    drawn,
                    validate=False,
                    include_plotlyjs=False,
                    full_html=False,
                    div_id=block.div_id,
                    config=PLOTLY_CONFIG,
                    default_width="100%",
                    default_height=f"{block.figure.layout.height or 420}px",
                )
                body.append(
                    f'<div class="figure" id="{_html(block.div_id)}-block"><div class="plot">{div}</div>'
                    f'<p class="finding">{_html(block.finding)}</p>'
                    f'<p class="source">Numbers: <a href="{_html(block.csv)}.csv">{_html(block.csv)}.csv</a></p>'
                    "</div>"
                )
            elif isinstance(block, Table):
                body.append(_table_html(block))
            elif isinstance(block, Findings):
                items = "".join(
                    f'<li><a href="#{_html(sid)}">{_html(title)}</a>: {_html(text)}</li>'
                    for sid, title, text in block.items
                )
                body.append(f'<ul class="key-findings">{items}</ul>')
            elif isinstance(block, Paragraph) and block.kind == "h3":
                slug = block.text.lower().replace(" ", "-")
                body.append(f'<h3 id="{_html(slug)}">{_html(block.text)}</h3>')
            else:
                body.append(f'<p class="{_html(block.kind)}">{_html(block.text)}</p>')
        body.append("</section>")
    # The bundle goes in as is; it holds no "</script" (checked by the tests).
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_html(title)}</title>\n<style>{CSS}</style>\n"
        f'<script type="text/javascript">{get_plotlyjs()}</script>\n</head>\n<body>\n'
        f"<header><h1>{_html(title)}</h1><p>Generated {generated} by gca {_html(__version__)}."
        " All times UTC. Every figure's numbers are in the CSV named below it; jobs.csv has one row per "
        "job.</p></header>\n"
        f"<nav>{nav}</nav>\n<main>\n" + "\n".join(body) + "\n</main>\n</body>\n</html>\n"
    )


# A one-row table with more columns than fit across a card is shown as field | value rows.
TRANSPOSE_OVER_COLUMNS = 7


def _table_html(t: Table) -> str:
    df = t.frame
    if df.height == 1 and df.width > TRANSPOSE_OVER_COLUMNS:
        return _record_html(t)
    shown = df.head(t.max_rows)
    more = (
        f" Showing the first {t.max_rows} of {df.height:,} rows; all are in {t.name}.csv."
        if df.height > t.max_rows
        else ""
    )
    # a column name may break after its underscores: a wide table of long names still fits its card
    head = "".join(f"<th>{_html(c).replace('_', '_<wbr>')}</th>" for c in df.columns)
    rows = []
    for row in shown.iter_rows(named=True):
        cells = []
        for col, value in row.items():
            text, is_text = _cell(col, value)
            cells.append(f'<td class="text">{_html(text)}</td>' if is_text else f"<td>{_html(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if not rows:
        rows.append(f'<tr><td class="text" colspan="{max(len(df.columns), 1)}">(no rows)</td></tr>')
    caption = _html(t.caption + more)
    return (
        f'<div class="table-block"><p class="caption">{caption}'
        f' <a href="{_html(t.name)}.csv">{_html(t.name)}.csv</a></p>'
        f'<div class="table-wrap"><table id="table-{_html(t.name)}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></div>"
    )


def _record_html(t: Table) -> str:
    rows = []
    for col, value in t.frame.row(0, named=True).items():
        text, is_text = _cell(col, value)
        rows.append(
            f'<tr><th scope="row">{_html(col)}</th>'
            + (f'<td class="text">{_html(text)}</td>' if is_text else f"<td>{_html(text)}</td>")
            + "</tr>"
        )
    return (
        f'<div class="table-block"><p class="caption">{_html(t.caption)}'
        f' <a href="{_html(t.name)}.csv">{_html(t.name)}.csv</a></p>'
        f'<div class="table-wrap"><table id="table-{_html(t.name)}" class="record">'
        f"<tbody>{''.join(rows)}</tbody></table></div></div>"
    )


def _cell(col: str, value: object) -> tuple[str, bool]:
    """Display text of one table cell, and whether it is text (left-aligned)."""
    if value is None:
        return "", False
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M"), False
    if isinstance(value, int):
        return f"{value:,}", False
    if isinstance(value, float):
        if col.endswith("_s"):
            return fmt_dur(value), False
        if col == "p_value":
            return ("<0.001" if value < 0.001 else f"{value:.3f}"), False
        if abs(value) >= 100:
            return f"{value:,.0f}", False
        return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}", False
    return str(value), True
