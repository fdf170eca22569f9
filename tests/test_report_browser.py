"""The report page in a real browser (Debian's headless chromium, driven by Playwright):
no console or page errors, every figure drawn by plotly, and no request leaves file://.

Skipped only where /usr/bin/chromium (or playwright) is missing and we are not in CI;
in CI (CI=true) a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpucluster_analysis.report.build import Written, build_report

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; the browser check must run in CI")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def slurm_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic Slurm site: sacct, scontrol, nvidia-smi and DCGM profiling, so the report
    also draws the GPU activity section's figures."""
    from gpucluster_analysis.db import open_store
    from gpucluster_analysis.ingest import IngestOptions, ingest_paths
    from gpucluster_analysis.synth.slurm import generate_slurm_trace

    root = tmp_path_factory.mktemp("slurm_browser")
    generate_slurm_trace(root / "trace", jobs=120, machines=6, days=1.0, seed=5, interval_s=300)
    zone = json.loads((root / "trace" / "truth.json").read_text())["zone"]
    db = root / "s.duckdb"
    with open_store(db) as con:
        ingest_paths(con, [root / "trace"], IngestOptions(zone=zone))
    return db


@pytest.fixture(scope="module", params=["philly_sample", "synthetic_slurm", "philly_sample_compared"])
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Written:
    if request.param == "philly_sample":
        return request.getfixturevalue("sample_report")  # the session's, only read
    store = request.getfixturevalue("slurm_store" if request.param == "synthetic_slurm" else "sample_store")
    out = tmp_path_factory.mktemp("browser") / "out"
    if request.param != "philly_sample_compared":
        return build_report(store, out)
    # the two halves of the extract's queue starts, the first as the baseline (Comparison section)
    from gpucluster_analysis.analyze.selection import Selection
    from gpucluster_analysis.db import open_store

    with open_store(store, read_only=True) as con:
        first, last = con.execute(
            "SELECT min(coalesce(eligible_at, submit_at)), max(coalesce(eligible_at, submit_at)) FROM jobs"
        ).fetchall()[0]
    middle = first + (last - first) / 2
    return build_report(store, out, selection=Selection(since=middle), baseline=Selection(until=middle))


def test_report_renders_offline_without_errors(report: Written, request: pytest.FixtureRequest) -> None:
    if request.node.callspec.params["report"] == "synthetic_slurm":  # it has the GPU activity figures
        assert 'id="fig-activity-grid"' in report.html.read_text()
    assert_renders_offline(report)


def assert_renders_offline(report: Written, then: Callable[[Any], Any] | None = None) -> Any:
    """No console or page errors, nothing fetched from outside, every figure drawn with marks.
    `then(page)`, when given, runs on the drawn page; its result is returned."""
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")

    expected = len(re.findall(r"Plotly\.newPlot\(", report.html.read_text()))
    assert expected >= 12
    errors: list[str] = []
    outside: list[str] = []

    def route(r) -> None:
        if r.request.url.startswith(LOCAL_SCHEMES):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", route)
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("requestfailed", lambda req: None if req.url in outside else errors.append(f"failed: {req.url}"))
            page.goto(report.html.resolve().as_uri(), wait_until="load")
            page.wait_for_function(
                "n => document.querySelectorAll('.js-plotly-plot').length === n"
                " && [...document.querySelectorAll('.js-plotly-plot')].every(d => d.querySelector('svg.main-svg'))",
                arg=expected,
                timeout=30_000,
            )
            drawn = page.evaluate(
                "[...document.querySelectorAll('.js-plotly-plot')]"
                ".filter(d => d.querySelector('svg.main-svg') && d.querySelector('.plot-container')).length"
            )
            # every figure has data drawn: bars, lines or heatmap cells, not just empty axes
            with_marks = page.evaluate(
                "[...document.querySelectorAll('.js-plotly-plot')]"
                ".filter(d => d.querySelector('.trace, .hm, image')).length"
            )
            # no table wider than its card: every column visible without scrolling
            too_wide = page.evaluate(
                "[...document.querySelectorAll('table')]"
                ".filter(t => t.scrollWidth > t.parentElement.clientWidth + 1).map(t => t.id)"
            )
            looked = then(page) if then is not None else None
            page.wait_for_timeout(300)  # let late console messages arrive
        finally:
            browser.close()
    assert errors == []
    assert too_wide == []
    assert outside == []
    assert drawn == expected
    assert with_marks == expected
    return looked


def test_hostile_names_render_as_plain_text(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Names that are Plotly markup show as their own text: the drawn SVG holds no <a> or <b>
    from the data, legends, axis labels and hover text read as the names, and a name's `%{y}`
    is not filled in by the hover template (tests/hostile_names.py: issue #26, item 6).

    Reproduction (before: the VC was a live link in the legend and on the axis):
        echo '[{"jobid": "j1", "user": "u", "vc": "<a href=\"http://x.example\">v</a>", ...}]' > cluster_job_log
        gca ingest cluster_job_log --db s.duckdb && gca report --db s.duckdb --out r
        chromium r/index.html   # the legend entry is a link to http://x.example
    """
    from tests import hostile_names as hostile

    report = build_report(
        hostile.build_store(tmp_path_factory.mktemp("hostile")), tmp_path_factory.mktemp("hostile_out")
    )

    def look(page):
        legend = page.evaluate(
            "[...document.querySelectorAll('#fig-queue-delay-cdf-by-vc .legendtext')].map(t => t.textContent)"
        )
        shown = "<b>x</b>%{y}"
        hover = page.evaluate(
            """n => { const gd = document.getElementById('fig-queue-delay-cdf-by-vc');
                     Plotly.Fx.hover(gd, [{curveNumber: n, pointNumber: 0}]);
                     return [...gd.querySelectorAll('.hoverlayer text')].map(t => t.textContent); }""",
            legend.index(shown) if shown in legend else 0,
        )  # (else the legend assertion below fails)
        return {
            "markup": page.evaluate("document.querySelectorAll('.js-plotly-plot svg a, .js-plotly-plot svg b').length"),
            "legend": legend,
            "ticks": page.evaluate(
                "[...document.querySelectorAll('#fig-wait-causes-by-vc .xtick text')].map(t => t.textContent)"
            ),
            "hover": hover,
        }

    seen = assert_renders_offline(report, then=look)
    vcs = sorted([*hostile.VCS, "plain_vc"])
    assert seen["markup"] == 0  # after the hover too: its label is inside the plot's SVG
    assert sorted(seen["legend"]) == vcs and sorted(seen["ticks"]) == vcs
    assert (
        len(seen["hover"]) == 1 and seen["hover"][0].startswith("<b>x</b>%{y}: ") and "at or below" in seen["hover"][0]
    )
