"""`gca ingest prometheus+http://...`: pulls from a REAL Prometheus (Debian's /usr/bin/prometheus).

The module writes OpenMetrics samples with known values (two hosts, eight GPUs and a MIG
instance, a gap), backfills a TSDB with `promtool tsdb create-blocks-from openmetrics`,
and serves it from a Prometheus on a free loopback port, protected by basic auth (the
example user of Prometheus' docs: admin / test), so every pull must send its header.
Skipped where prometheus or promtool is missing, except in CI (CI=true), where that fails.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ExitCode, InputError, ServerError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.ingest.gpu import prometheus
from gpucluster_analysis.ingest.gpu.prometheus import pull
from gpucluster_analysis.ingest.gpu.prometheus_plan import (
    PrometheusSource,
    default_match,
    parse_source,
    parse_step,
    query_for,
)
from tests.marks import keep_by_default
from tests.store_helpers import jobs_csv, rows

PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")

T0 = 1714521600  # 2024-05-01T00:00:00Z
STEP = 60  # one sample a minute, on the minute
MINUTES = 180
GAP = range(60, 90)  # gpu-a sends nothing for these minutes
HOSTS = ("gpu-a", "gpu-b")
MIG_GPU = 3  # gpu-b's GPU 3 is split into MIG instances: instance 1 reports memory only
# The docs' example user; bcrypt cost 12, which Prometheus caches after the first request.
WEB_CONFIG = "basic_auth_users:\n  admin: $2b$12$hNf2lSsxfm0.i4a.1kVpSOVyBCfIB51VRjgBUyv6kdnyTlgWj81Ay\n"
BASIC = "Basic " + base64.b64encode(b"admin:test").decode()
AUTH = ["--header", f"Authorization: {BASIC}"]
SINCE, UNTIL = "2024-05-01T00:00:00Z", "2024-05-01T03:00:00Z"


def util(host: int, gpu: int, k: int) -> int:
    return (17 * host + 7 * gpu + k) % 101


def fb_used(host: int, gpu: int, k: int) -> int:
    return 1000 * (gpu + 1) + 3 * host + k


def minutes(host: int) -> list[int]:
    return [k for k in range(MINUTES) if not (host == 0 and k in GAP)]


def labels(host: int, gpu: int, **extra: str) -> str:
    pairs = {
        "Hostname": HOSTS[host],
        "gpu": str(gpu),
        "UUID": f"GPU-{host}{gpu}-0000",
        "modelName": "NVIDIA A100-SXM4-80GB",
        "pod": f"train-{host}-{gpu // 2}",
        "namespace": "ml",
        "container": "main",
        "hpc_job": f"{4000 + host}",
        **extra,
    }
    return ",".join(f'{k}="{v}"' for k, v in pairs.items())


def whole_gpus() -> list[tuple[int, int]]:
    return [(h, g) for h in range(2) for g in range(4) if (h, g) != (1, MIG_GPU)]


def openmetrics() -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    lines += [
        f"DCGM_FI_DEV_GPU_UTIL{{{labels(h, g)}}} {util(h, g, k)} {T0 + STEP * k}"
        for h, g in whole_gpus()
        for k in minutes(h)
    ]
    lines.append("# TYPE DCGM_FI_DEV_FB_USED gauge")
    lines += [
        f"DCGM_FI_DEV_FB_USED{{{labels(h, g)}}} {fb_used(h, g, k)} {T0 + STEP * k}"
        for h, g in whole_gpus()
        for k in minutes(h)
    ]
    lines += [
        f"DCGM_FI_DEV_FB_USED{{{labels(1, MIG_GPU, GPU_I_ID='1', GPU_I_PROFILE='3g.40gb')}}} {500 + k} {T0 + STEP * k}"
        for k in range(MINUTES)
    ]
    lines.append("# TYPE node_load1 gauge")  # not DCGM: the default --match leaves it out
    lines += [f'node_load1{{Hostname="gpu-a"}} 1.5 {T0 + STEP * k}' for k in range(MINUTES)]
    return "\n".join(lines) + "\n# EOF\n"


def at(k: int) -> datetime:
    return datetime.fromtimestamp(T0 + STEP * k, UTC).replace(tzinfo=None)


def expected_samples(ks: range = range(MINUTES)) -> list[tuple]:
    return sorted((at(k), HOSTS[h], g, float(util(h, g, k))) for h, g in whole_gpus() for k in minutes(h) if k in ks)


def expected_memory(ks: range = range(MINUTES)) -> list[tuple]:
    whole = [
        (at(k), HOSTS[h], g, None, float(fb_used(h, g, k))) for h, g in whole_gpus() for k in minutes(h) if k in ks
    ]
    mig = [(at(k), "gpu-b", MIG_GPU, 1, float(500 + k)) for k in ks]
    return sorted(whole + mig, key=lambda r: (r[0], r[1], r[2], r[3] or 0))


def series_and_points(first: int, last: int) -> tuple[int, int]:
    """How many generated DCGM series have points in minutes first..last, and how many points."""
    per_series = [sum(first <= k <= last for k in minutes(h)) for h, g in whole_gpus() for _ in range(2)]
    per_series.append(last - first + 1)  # the MIG instance
    return sum(1 for n in per_series if n), sum(per_series)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A Prometheus serving a TSDB directory on a loopback port, started and stopped by the tests."""

    def __init__(self, data: Path, port: int, work: Path) -> None:
        self.data, self.port, self.work = data, port, work
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"prometheus+http://127.0.0.1:{port}"
        self.source = parse_source(self.url, [f"Authorization: {BASIC}"])

    def start(self) -> None:
        (self.work / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
        (self.work / "web.yml").write_text(WEB_CONFIG)
        log = (self.work / "prometheus.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={self.work / 'prometheus.yml'}",
                f"--web.config.file={self.work / 'web.yml'}",
                f"--storage.tsdb.path={self.data}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=36500d",  # the samples are from 2024
                "--query.lookback-delta=30s",
            ],  # under the step: a point after the gap never repeats the last value before it
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.work / 'prometheus.log').read_text()[-2000:]}")
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{self.port}/-/ready", headers={"Authorization": BASIC}
                )
                with urllib.request.urlopen(request, timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("prometheus did not become ready within 20 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; .ci/run installs Debian's prometheus package")
    pytest.skip(reason)


def backfilled(tmp_path_factory: pytest.TempPathFactory, name: str, samples: str) -> Path:
    """A TSDB directory promtool built from OpenMetrics text (skipped, or failed in CI, without it)."""
    for tool in (PROMETHEUS, PROMTOOL):
        if not tool.exists():
            _unavailable(f"{tool} is not installed (apt-get install prometheus)")
    work = tmp_path_factory.mktemp(name)
    (work / "samples.om").write_text(samples)
    subprocess.run(
        [str(PROMTOOL), "tsdb", "create-blocks-from", "openmetrics", str(work / "samples.om"), str(work / "data")],
        check=True,
        capture_output=True,
    )
    return work / "data"


@pytest.fixture(scope="module")
def tsdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return backfilled(tmp_path_factory, "tsdb", openmetrics())


@pytest.fixture(scope="module")
def server(tsdb: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tsdb, free_port(), tmp_path_factory.mktemp("prometheus"))
    running.start()
    yield running
    running.stop()


def ms(k: int) -> int:
    return (T0 + STEP * k) * 1000


def chunks(db: Path) -> list[tuple]:
    return rows(db, "SELECT start_at, end_at, step_s, series, samples FROM prometheus_chunks ORDER BY start_at")


def samples(db: Path) -> list[tuple]:
    return rows(db, "SELECT sample_at, machine_id, gpu_index, util_pct FROM gpu_samples ORDER BY 1, 2, 3")


def memory(db: Path) -> list[tuple]:
    return rows(
        db,
        "SELECT sample_at, machine_id, gpu_index, gpu_instance_id, mem_used_mib FROM gpu_sample_details"
        " ORDER BY 1, 2, 3, coalesce(gpu_instance_id, 0)",
    )


def run_pull(
    db: Path, source: PrometheusSource, first: int = 0, end: int = MINUTES, **kwargs: object
) -> prometheus.PullReport:
    with open_store(db) as con:
        return pull(con, source, since_ms=ms(first), until_ms=ms(end), step_ms=STEP * 1000, **kwargs)


@pytest.fixture(scope="module")
def pulled(server: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, prometheus.PullReport]:
    db = tmp_path_factory.mktemp("pulled") / "s.duckdb"
    return db, run_pull(db, server.source, max_points=50)


def test_pulled_values_equal_the_generated_ones(pulled: tuple[Path, prometheus.PullReport]) -> None:
    db, _ = pulled
    assert samples(db) == expected_samples()
    assert memory(db) == expected_memory()
    # the gap: no gpu-a sample at all in it, not the last value before it repeated
    assert rows(
        db,
        "SELECT count(*) FROM gpu_samples WHERE machine_id = 'gpu-a' AND sample_at >= ? AND sample_at < ?",
        at(GAP.start),
        at(GAP.stop),
    ) == [(0,)]
    assert rows(db, "SELECT DISTINCT machine_id, gpu_index, uuid FROM gpu_devices ORDER BY 1, 2") == [
        (HOSTS[h], g, f"GPU-{h}{g}-0000") for h in range(2) for g in range(4)
    ]
    assert rows(db, "SELECT count(*) FROM rejects") == [(0,)]


def test_a_pull_holds_its_samples_to_the_bound_of_gpus_per_node(server: Server, tmp_path: Path) -> None:
    """Issue #26: --max-gpus-per-node holds for a pull's chunks as for files: with a bound of 2,
    the samples of GPUs 2 and 3 are rejects, saying so, and GPUs 0 and 1 are stored as ever."""
    from gpucluster_analysis.ingest import IngestOptions

    db = tmp_path / "s.duckdb"
    run_pull(db, server.source, max_points=50, options=IngestOptions(max_gpus_per_node=2))
    assert samples(db) == [s for s in expected_samples() if s[2] < 2]
    reasons = rows(db, "SELECT DISTINCT reason FROM rejects ORDER BY 1")
    assert reasons == [(f"GPU index {g}: over the bound of 2 GPUs per node (--max-gpus-per-node)",) for g in (2, 3)]


def test_chunks_stay_under_the_points_limit_and_tile_the_range(pulled: tuple[Path, prometheus.PullReport]) -> None:
    db, report = pulled
    # 180 minutes at most 50 points a chunk: 50 + 50 + 50 + 30
    bounds = [(0, 49), (50, 99), (100, 149), (150, 179)]
    assert chunks(db) == [(at(a), at(b), 60.0, *series_and_points(a, b)) for a, b in bounds]
    assert [(c.start_ms, c.end_ms) for c in report.chunks] == [(ms(a), ms(b)) for a, b in bounds]
    # one ingested_files row per chunk, named by the request (server, query, range), never by a header
    paths = [
        p
        for (p,) in rows(
            db, "SELECT f.path FROM prometheus_chunks c JOIN ingested_files f USING (file_id) ORDER BY c.start_at"
        )
    ]
    assert len(paths) == 4 and all(
        p.startswith(f"{report.server}/api/v1/query_range?query={report.query}&start=") for p in paths
    )
    assert paths[1].endswith("&start=2024-05-01T00:50:00Z&end=2024-05-01T01:39:00Z&step=60")


def test_chunks_shrink_to_bound_the_response(server: Server, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    report = run_pull(db, server.source, max_points=50, max_response_points=300)
    stored = chunks(db)
    points = [(c.end_ms - c.start_ms) // (STEP * 1000) + 1 for c in report.chunks]
    # the first chunk tells how many series there are; each later one holds at most 300 points in all
    assert all(n * series_and_points(0, MINUTES - 1)[0] <= 300 for n in points[1:]) and len(points) > 4
    assert [r[0] for r in stored] == [at(sum(points[:i])) for i in range(len(points))] and sum(points) == MINUTES
    assert samples(db) == expected_samples()


class _Interrupt:
    """Ctrl-C after the n-th stored chunk."""

    def __init__(self, after: int) -> None:
        self.after, self.stored = after, 0

    def covered(self, start_ms: int, end_ms: int, chunks: int) -> None: ...
    def planned(self, points: int) -> None: ...

    def chunk_stored(self, chunk: object, points: int) -> None:
        self.stored += 1
        if self.stored == self.after:
            raise KeyboardInterrupt


def test_an_interrupted_pull_keeps_its_chunks_and_resumes(server: Server, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with pytest.raises(KeyboardInterrupt):
        run_pull(db, server.source, max_points=50, listener=_Interrupt(after=2))
    assert [(r[0], r[1]) for r in chunks(db)] == [(at(0), at(49)), (at(50), at(99))]
    assert samples(db) == expected_samples(range(100))
    report = run_pull(db, server.source, max_points=50)
    assert report.covered == [(ms(0), ms(99), 2)]
    assert [(c.start_ms, c.end_ms) for c in report.chunks] == [(ms(100), ms(149)), (ms(150), ms(179))]
    assert samples(db) == expected_samples() and memory(db) == expected_memory()
    assert rows(db, "SELECT count(*), count(DISTINCT file_id) FROM prometheus_chunks") == [(4, 4)]


def test_a_server_gone_mid_pull_fails_in_one_line_and_the_pull_resumes(tsdb: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(tsdb, data)
    own = Server(data, free_port(), tmp_path)
    own.start()

    class StopServer(_Interrupt):
        def chunk_stored(self, chunk: object, points: int) -> None:
            self.stored += 1
            if self.stored == 1:
                own.stop()

    db = tmp_path / "s.duckdb"
    try:
        with pytest.raises(ServerError) as failed:
            run_pull(db, own.source, max_points=60, listener=StopServer(0))
        assert str(failed.value).startswith(f"http://127.0.0.1:{own.port}/api/v1/query_range (2024-05-01T01:00:00Z to ")
        assert "connection refused" in str(
            failed.value
        ) and "the 1 chunks stored up to 2024-05-01T00:59:00Z are kept" in str(failed.value)
        assert samples(db) == expected_samples(range(60))
        own.start()
        report = run_pull(db, own.source, max_points=60)
    finally:
        own.stop()
    assert report.covered == [(ms(0), ms(59), 1)] and len(report.chunks) == 2
    assert samples(db) == expected_samples() and memory(db) == expected_memory()


def test_half_the_range_then_the_whole_then_again_stores_nothing_twice(server: Server, tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    half = runner.invoke(
        app,
        ["ingest", server.url, "--since", SINCE, "--until", "2024-05-01T01:30:00Z", "--step", "1m", *AUTH, "--db", db],
    )
    assert half.exit_code == 0, half.output
    assert samples(Path(db)) == expected_samples(range(90))
    whole = runner.invoke(
        app, ["ingest", server.url, "--since", SINCE, "--until", UNTIL, "--step", "60s", *AUTH, "--db", db]
    )
    assert whole.exit_code == 0, whole.output
    server_url = f"http://127.0.0.1:{server.port}"
    assert (
        f"gca: {server_url}: 2024-05-01T00:00:00Z to 2024-05-01T01:29:00Z was pulled before (1 chunk); skipped"
        in whole.stderr
    )
    assert f"gca: {server_url}: stored 1 chunk from 2024-05-01T01:30:00Z to 2024-05-01T02:59:00Z" in whole.stderr
    assert samples(Path(db)) == expected_samples() and memory(Path(db)) == expected_memory()
    before = rows(Path(db), "SELECT (SELECT count(*) FROM ingested_files), (SELECT count(*) FROM gpu_sample_details)")
    again = runner.invoke(app, ["ingest", server.url, "--since", SINCE, "--until", UNTIL, *AUTH, "--db", db])
    assert again.exit_code == 0, again.output
    # without --step: the step is the interval the samples show, a minute
    assert f"gca: {server_url}: the samples are 60 s apart: pulled at that step" in again.stderr
    assert (
        f"gca: {server_url}: 2024-05-01T00:00:00Z to 2024-05-01T02:59:00Z was pulled before (2 chunks); skipped"
        in again.stderr
    )
    assert f"gca: {server_url}: nothing new to pull" in again.stderr
    assert (
        rows(Path(db), "SELECT (SELECT count(*) FROM ingested_files), (SELECT count(*) FROM gpu_sample_details)")
        == before
    )
    assert samples(Path(db)) == expected_samples()
    # the same range with another --match would store its samples twice: refused
    other = runner.invoke(
        app, ["ingest", server.url, "--since", SINCE, "--until", UNTIL, "--match", "DCGM_FI_.*", *AUTH, "--db", db]
    )
    assert other.exit_code == ExitCode.USAGE and "pulled before with another query" in other.stderr


def test_a_pull_stores_no_sample_an_exported_file_gave(server: Server, tmp_path: Path) -> None:
    """curl 'http://HOST:9090/api/v1/query_range?query=...&start=T0&end=T0+99m&step=60' > export.json;
    gca ingest export.json; then gca ingest prometheus+http://HOST:9090 over three hours: the
    export's 100 minutes are not stored again (chunks of one pull never overlap each other, but
    a file of the same DCGM samples may overlap them)."""
    query = query_for(default_match())
    params = urllib.parse.urlencode({"query": query, "start": T0, "end": T0 + 99 * STEP, "step": STEP})
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/api/v1/query_range?{params}", headers={"Authorization": BASIC}
    )
    export = tmp_path / "export.json"
    with urllib.request.urlopen(request, timeout=30) as answer:
        export.write_bytes(answer.read())
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        (report,) = ingest_paths(con, [export], IngestOptions())
    assert report.format == "dcgm_query_range" and samples(db) == expected_samples(range(100))
    pulled = run_pull(db, server.source, max_points=50)
    # a sample is a (GPU or MIG instance, minute): each has a memory row
    assert pulled.duplicates == len(expected_memory(range(100)))
    assert pulled.rows == len(expected_memory()) - len(expected_memory(range(100)))
    assert samples(db) == expected_samples() and memory(db) == expected_memory()


def one_error_line(result) -> str:
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gca: error: "), result.stderr
    return str(lines[0])


class _NotPrometheus(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>Grafana</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None: ...


def test_errors_are_one_line_naming_the_url(server: Server, tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.duckdb")
    base = f"http://127.0.0.1:{server.port}"
    pull_args = ["--since", SINCE, "--until", UNTIL, "--db", db]

    closed = free_port()
    line = one_error_line(
        result := runner.invoke(app, ["ingest", f"prometheus+http://127.0.0.1:{closed}", *pull_args, *AUTH])
    )
    assert result.exit_code == ExitCode.DATA
    # without --step the first request asks for the scrape interval; with one, for the samples
    assert (
        line.startswith(f"gca: error: http://127.0.0.1:{closed}/api/v1/query (the scrape interval, at ")
        and "connection refused" in line
    )
    line = one_error_line(
        result := runner.invoke(
            app, ["ingest", f"prometheus+http://127.0.0.1:{closed}", *pull_args, "--step", "1m", *AUTH]
        )
    )
    assert (
        line.startswith(f"gca: error: http://127.0.0.1:{closed}/api/v1/query_range (2024-05-01T00:00:00Z to ")
        and "connection refused" in line
    )

    line = one_error_line(result := runner.invoke(app, ["ingest", f"{server.url}/nope", *pull_args, *AUTH]))
    assert (
        result.exit_code == ExitCode.USAGE
        and line.startswith(f"gca: error: {base}/nope/api/v1/query (")
        and "HTTP 404" in line
    )

    line = one_error_line(result := runner.invoke(app, ["ingest", server.url, *pull_args]))  # no credentials
    assert (
        result.exit_code == ExitCode.USAGE and "HTTP 401" in line and "--header 'Authorization: Bearer TOKEN'" in line
    )

    # valid for Python, not for Prometheus (RE2 has no lookbehind): the server's bad_data error
    line = one_error_line(
        result := runner.invoke(app, ["ingest", server.url, *pull_args, *AUTH, "--match", "(?<=D)CGM.*"])
    )
    assert result.exit_code == ExitCode.USAGE and "HTTP 400" in line and "bad_data" in line and "--match" in line

    line = one_error_line(result := runner.invoke(app, ["ingest", f"http://127.0.0.1:{server.port}", *pull_args]))
    assert result.exit_code == ExitCode.USAGE and "prometheus+http://HOST:9090" in line
    line = one_error_line(result := runner.invoke(app, ["ingest", server.url, "--until", UNTIL, "--db", db]))
    assert result.exit_code == ExitCode.USAGE and "needs --since" in line
    line = one_error_line(result := runner.invoke(app, ["ingest", server.url, *pull_args, "--step", "soon"]))
    assert result.exit_code == ExitCode.USAGE and "--step 'soon'" in line

    other = ThreadingHTTPServer(("127.0.0.1", 0), _NotPrometheus)
    thread = threading.Thread(target=other.serve_forever, daemon=True)
    thread.start()
    try:
        line = one_error_line(
            result := runner.invoke(app, ["ingest", f"prometheus+http://127.0.0.1:{other.server_port}", *pull_args])
        )
    finally:
        other.shutdown()
    assert result.exit_code == ExitCode.USAGE and "not Prometheus API JSON" in line
    assert rows(Path(db), "SELECT count(*) FROM prometheus_chunks") == [(0,)]


def test_a_server_that_does_not_answer_times_out(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        source = parse_source(f"prometheus+http://127.0.0.1:{silent.getsockname()[1]}")
        with pytest.raises(
            ServerError, match=r"^http://127\.0\.0\.1:\d+/api/v1/query_range \(.*\): no answer after 0\.5 s"
        ):
            run_pull(tmp_path / "s.duckdb", source, timeout_s=0.5)


EMPTY_ANSWER = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'


class _Trickle(BaseHTTPRequestHandler):
    """A broken server: a byte every TRICKLE_S, in its headers or in its answer (`where`)."""

    where = "answer"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(EMPTY_ANSWER)}\r\n\r\n"
        ).encode()
        slow = head + EMPTY_ANSWER if self.where == "headers" else EMPTY_ANSWER
        try:
            if self.where != "headers":
                self.wfile.write(head)
            for byte in slow:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(TRICKLE_S)
        except OSError:
            pass  # gca hung up

    def log_message(self, *args: object) -> None: ...


TRICKLE_S = 0.1  # the whole answer would take ~6 s, its headers and answer ~13 s


@pytest.mark.parametrize("where", keep_by_default(["headers", "answer"], {"answer"}))
def test_a_trickling_server_is_cut_at_the_deadline(tmp_path: Path, where: str) -> None:
    """A Prometheus answering one byte every 5 s held the pull over 200 s despite the documented
    60 s timeout (a per-read timeout, not a total one). Each byte here comes well inside the
    socket's timeout; the request's whole time is what is bounded."""
    handler = type("Trickle", (_Trickle,), {"where": where})
    trickle = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=trickle.serve_forever, daemon=True).start()
    source = parse_source(f"prometheus+http://127.0.0.1:{trickle.server_port}")
    db = tmp_path / "s.duckdb"
    started = time.monotonic()
    try:
        with pytest.raises(ServerError) as failed:
            run_pull(db, source, 0, 1, timeout_s=1.0)
    finally:
        trickle.shutdown()
    took = time.monotonic() - started
    assert 1.0 <= took < 3.0, took
    what = "no answer" if where == "headers" else "the answer still incomplete ("
    assert f"): {what}" in str(failed.value) and "after 1 s, the most a request may take" in str(failed.value)
    assert rows(db, "SELECT count(*) FROM prometheus_chunks") == [(0,)]


def test_a_trickling_tls_handshake_is_cut_at_the_deadline(tmp_path: Path) -> None:
    """The deadline holds from the TCP connection on: a server that sends its TLS handshake a
    byte at a time (here one that never completes) is cut too."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(1)

    def handshake_forever() -> None:
        conn, _ = listening.accept()
        with conn:
            try:
                conn.recv(4096)  # the client's hello
                for byte in b"\x16\x03\x03\x40\x00" + bytes(64):  # a handshake record of 16 KB, a byte at a time
                    conn.sendall(bytes([byte]))
                    time.sleep(TRICKLE_S)
            except OSError:
                pass  # gca hung up

    threading.Thread(target=handshake_forever, daemon=True).start()
    source = parse_source(f"prometheus+https://127.0.0.1:{listening.getsockname()[1]}")
    started = time.monotonic()
    try:
        with pytest.raises(ServerError, match=r"\): no answer after 1 s, the most a request may take"):
            run_pull(tmp_path / "s.duckdb", source, 0, 1, timeout_s=1.0)
    finally:
        listening.close()
    assert time.monotonic() - started < 3.0


class _Endless(BaseHTTPRequestHandler):
    """A server whose answer never ends, plain or gzip; it records each request's range and
    how many bytes it could send before gca hung up."""

    gzip = False
    requests: list[tuple[str, str, int]] = []

    def do_GET(self) -> None:
        import gzip as gz
        import urllib.parse

        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.gzip:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()  # no length: the answer ends when the connection does
        series = (
            b'{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","Hostname":"gpu-a","gpu":"0"},"values":[[1714521600,"1"]]},'
        )
        block = series * (64 * 1024 // len(series))
        start = b'{"status":"success","data":{"resultType":"matrix","result":['
        sent = 0
        try:
            self.wfile.write(gz.compress(start) if self.gzip else start)
            packed = gz.compress(block * 16) if self.gzip else block * 16  # ~1 MB (~3 KB in gzip, so ~300 GB an hour)
            while True:
                self.wfile.write(packed)
                sent += len(packed)
        except OSError:
            pass  # gca hung up
        self.requests.append((query["start"][0], query["end"][0], sent))

    def log_message(self, *args: object) -> None: ...


@pytest.mark.parametrize("gzipped", [False, True])
def test_an_oversized_answer_is_refused_without_reading_it_all(tmp_path: Path, gzipped: bool) -> None:
    """A 300 MB answer took 2.9 GB of memory before failing. Here every answer is endless:
    gca reads each up to the cap, asks again for half the sample times, and at one sample
    time fails in one line. A reader without the cap would read until the deadline (30 s)
    and fail saying so."""
    handler = type("Endless", (_Endless,), {"gzip": gzipped, "requests": []})
    endless = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=endless.serve_forever, daemon=True).start()
    source = parse_source(f"prometheus+http://127.0.0.1:{endless.server_port}")
    db = tmp_path / "s.duckdb"
    cap = 256 << 10
    started = time.monotonic()
    try:
        with pytest.raises(ServerError) as failed:
            run_pull(db, source, 0, 4, max_answer_bytes=cap, timeout_s=30)
        assert str(failed.value).startswith(
            f"http://127.0.0.1:{endless.server_port}/api/v1/query_range (2024-05-01T00:00:00Z to 2024-05-01T00:00:00Z):"
            " the answer is over 262,144 bytes, the most gca reads of one request"
        )
        assert "--match" in str(failed.value)
        deadline = time.monotonic() + 5  # each handler records its request once gca has hung up
        while len(handler.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        endless.shutdown()
    assert time.monotonic() - started < 10
    # four sample times, then two, then one (each chunk starting at the same time): seconds since the epoch
    starts_ends = [(start, end) for start, end, _ in handler.requests]
    assert sorted(starts_ends, key=lambda r: -int(r[1])) == [
        (str(T0), str(T0 + 3 * STEP)),
        (str(T0), str(T0 + STEP)),
        (str(T0), str(T0)),
    ]
    # what the server could send before gca hung up: the cap, a read block and the sockets' buffers
    assert all(sent < 32 << 20 for _, _, sent in handler.requests), handler.requests
    assert rows(db, "SELECT count(*) FROM prometheus_chunks") == [(0,)]


def test_a_chunk_whose_answer_is_too_big_is_pulled_in_halves(server: Server, tmp_path: Path) -> None:
    """Answers over the cap are asked again for fewer sample times; every sample is stored once."""
    db = tmp_path / "s.duckdb"
    cap = 12_000  # the first hour's 50-minute chunk of the 17 series answers ~17.5 KB, its labels ~4 KB of it
    report = run_pull(db, server.source, 0, 60, max_points=50, max_answer_bytes=cap)
    assert samples(db) == expected_samples(range(60)) and memory(db) == expected_memory(range(60))
    assert all(0 < c.answer_bytes <= cap for c in report.chunks)
    # the chunks tile the hour; the first, asked for 50 sample times, was cut in halves until it fit
    assert [c.start_ms for c in report.chunks] == [ms(0)] + [c.end_ms + STEP * 1000 for c in report.chunks[:-1]]
    assert report.chunks[-1].end_ms == ms(59)
    assert (report.chunks[0].end_ms - report.chunks[0].start_ms) // (STEP * 1000) + 1 in (25, 12, 6, 3, 1)


def test_headers_and_url_credentials_are_sent_and_never_kept(server: Server, tmp_path: Path) -> None:
    from gpucluster_analysis.report.build import build_report

    runner = CliRunner()
    db = tmp_path / "s.duckdb"
    token = "s3cr3t-t0ken-4711"
    secrets = [token, BASIC.split()[1], "admin:test"]
    by_header = runner.invoke(
        app,
        [
            "ingest",
            server.url,
            "--since",
            SINCE,
            "--until",
            "2024-05-01T01:00:00Z",
            "--step",
            "1m",
            *AUTH,
            "--header",
            f"X-Scope-OrgID: {token}",
            "--db",
            str(db),
        ],
    )
    assert by_header.exit_code == 0, by_header.output
    in_url = runner.invoke(
        app,
        [
            "ingest",
            f"prometheus+http://admin:test@127.0.0.1:{server.port}",
            "--since",
            "2024-05-01T01:00:00Z",
            "--until",
            UNTIL,
            "--step",
            "1m",
            "--header",
            f"X-Scope-OrgID: {token}",
            "--db",
            str(db),
        ],
    )
    assert in_url.exit_code == 0, in_url.output
    assert samples(db) == expected_samples()
    failing = runner.invoke(
        app,
        [
            "ingest",
            f"prometheus+http://admin:test@127.0.0.1:{free_port()}",
            "--since",
            SINCE,
            "--header",
            f"Authorization: Bearer {token}",
            "--db",
            str(db),
        ],
    )
    assert failing.exit_code == ExitCode.DATA
    badly = runner.invoke(
        app, ["ingest", server.url, "--since", SINCE, "--header", f"Authorization Bearer {token}", "--db", str(db)]
    )
    assert badly.exit_code == ExitCode.USAGE and "--header number 1" in badly.stderr
    # a job on gpu-a's GPUs 0 and 1 for the whole range, so that there is a report to write
    job_log = tmp_path / "cluster_job_log"
    job_log.write_text(
        json.dumps(
            [
                {
                    "status": "Pass",
                    "vc": "vc1",
                    "jobid": "job_dcgm",
                    "user": "u1",
                    "submitted_time": "2024-04-30 16:50:00",
                    "attempts": [
                        {
                            "start_time": "2024-04-30 17:00:00",
                            "end_time": "2024-04-30 20:00:00",  # PDT: 00:00-03:00 UTC
                            "detail": [{"ip": "gpu-a", "gpus": ["gpu0", "gpu1"]}],
                        }
                    ],
                }
            ]
        )
    )
    assert runner.invoke(app, ["ingest", str(job_log), "--db", str(db)]).exit_code == 0
    report = build_report(db, tmp_path / "report")
    values = [util(0, g, k) for g in (0, 1) for k in minutes(0)]
    assert jobs_csv(db)["job_dcgm"]["mean_gpu_util_pct"] == pytest.approx(sum(values) / len(values), abs=0.05)
    written = [db.read_bytes(), *(p.read_bytes() for p in (tmp_path / "report").rglob("*") if p.is_file())]
    captured = [r.output + r.stderr for r in (by_header, in_url, failing, badly)]
    # the bytes, and (should DuckDB compress a string) every text column through SQL
    with open_store(db, read_only=True) as con:
        columns = con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE data_type = 'VARCHAR'"
            " AND NOT internal AND database_name = current_database()"
        ).fetchall()
        for secret in secrets:
            assert not any(secret.encode() in blob for blob in written), secret
            assert not any(secret in text for text in captured), secret
            for table, column in columns:
                found = con.execute(
                    f'SELECT count(*) FROM "{table}" WHERE contains("{column}", ?)', [secret]
                ).fetchall()
                assert found == [(0,)], (table, column)
        assert len(columns) > 20
    assert report.html.exists()
    assert {r[0] for r in rows(db, "SELECT DISTINCT server FROM prometheus_chunks")} == {
        f"http://127.0.0.1:{server.port}"
    }


@pytest.mark.parametrize(
    ("text", "server"),
    [
        ("prometheus+http://prom.example:9090", "http://prom.example:9090"),
        ("prometheus+https://user:pw@prom.example/prometheus/", "https://prom.example/prometheus"),
        ("PROMETHEUS+HTTP://[::1]:9090", "http://[::1]:9090"),
    ],
)
def test_sources_and_steps(text: str, server: str) -> None:
    source = parse_source(text, ["X-A: b"])
    assert source.server == server and "b" not in repr(source) and "pw" not in repr(source)
    assert (
        parse_step("30s") == 30_000
        and parse_step("1m") == 60_000
        and parse_step("500ms") == 500
        and parse_step("15") == 15_000
    )
    for bad in ("http://h:9090", "prometheus+ftp://h", "prometheus+http://h:9090?x=1", "prometheus+http://:9090"):
        with pytest.raises(InputError):
            parse_source(bad)


# ------------------------------------------------------- the plainest dcgm-exporter series (issue #29)

PLAIN_STEP = 15  # Prometheus' default scrape interval
PLAIN_SCRAPES = 2 * 3600 // PLAIN_STEP  # two hours
PLAIN_GPUS = 8


def plain_util(gpu: int, k: int) -> int:
    return (11 * gpu + k) % 101


def plain_openmetrics() -> str:
    """dcgm-exporter's ordinary series (its default labels: no MIG, no pod, no job), one host."""

    def labels(gpu: int) -> str:
        return (
            f'gpu="{gpu}",UUID="GPU-9{gpu}-0000",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",'
            'Hostname="node07"'
        )

    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    lines += [
        f"DCGM_FI_DEV_GPU_UTIL{{{labels(g)}}} {plain_util(g, k)} {T0 + PLAIN_STEP * k}"
        for g in range(PLAIN_GPUS)
        for k in range(PLAIN_SCRAPES)
    ]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = backfilled(tmp_path_factory, "plain-tsdb", plain_openmetrics())
    running = Server(data, free_port(), tmp_path_factory.mktemp("plain-prometheus"))
    running.start()
    yield running
    running.stop()


def test_plain_dcgm_exporter_series_are_pulled_every_sample_once(plain_server: Server, tmp_path: Path) -> None:
    """The pull of series clean enough for the fast parse once failed (`stage_dcgm_series does not
    exist`); and at the default 30 s step a pull of 15 s scrapes kept half of them. 8 GPUs x 2 h
    of 15 s scrapes, pulled without --step, give every sample once, the chunks count every
    series and point, and a second pull adds nothing."""
    db = tmp_path / "s.duckdb"
    end = T0 + PLAIN_STEP * PLAIN_SCRAPES  # exclusive
    with open_store(db) as con:  # no step given: the 15 s the samples show, found by the pull
        report = pull(con, plain_server.source, since_ms=T0 * 1000, until_ms=end * 1000, step_ms=None)
    assert (report.step_ms, report.step_found) == (PLAIN_STEP * 1000, True)
    want = sorted(
        (datetime.fromtimestamp(T0 + PLAIN_STEP * k, UTC).replace(tzinfo=None), "node07", g, float(plain_util(g, k)))
        for g in range(PLAIN_GPUS)
        for k in range(PLAIN_SCRAPES)
    )
    assert samples(db) == want
    assert rows(db, "SELECT sum(series), sum(samples) FROM prometheus_chunks") == [
        (PLAIN_GPUS * len(chunks(db)), PLAIN_GPUS * PLAIN_SCRAPES)
    ]
    with open_store(db) as con:
        again = pull(con, plain_server.source, since_ms=T0 * 1000, until_ms=end * 1000, step_ms=None)
    assert again.chunks == [] and samples(db) == want
