"""The fast way of reading a Prometheus query_range answer of DCGM series (ingest/gpu/dcgm_fast.py)
stores exactly what the exact SQL way stores (dcgm_query_range.sql, dcgm_pivot.sql,
nvsmi_check.sql), and declines every answer it cannot store the same way.

Each answer is ingested with the fast way off and on; every table a DCGM answer fills must
come out the same, and the fast way must have been taken exactly where it should.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gpucluster_analysis.ingest import read_ahead
from gpucluster_analysis.ingest.gpu import dcgm_fast
from tests.marks import keep_by_default
from tests.store_helpers import telemetry_stored

DATA = Path(__file__).parent / "data" / "gpu"
T0 = 1_784_016_000

FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": (0, 100),
    "DCGM_FI_DEV_MEM_COPY_UTIL": (0, 100),
    "DCGM_FI_DEV_FB_USED": (0, 80000),
    "DCGM_FI_DEV_FB_FREE": (0, 80000),
    "DCGM_FI_DEV_POWER_USAGE": (50, 700),
    "DCGM_FI_DEV_GPU_TEMP": (25, 90),
    "DCGM_FI_DEV_SM_CLOCK": (300, 2000),
    "DCGM_FI_PROF_SM_ACTIVE": (0, 1),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0, 1),
    "DCGM_FI_PROF_DRAM_ACTIVE": (0, 1),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (0, 1),
    "DCGM_FI_PROF_PCIE_TX_BYTES": (0, 1e10),
}


def _value(rng: random.Random, low: float, high: float) -> str:
    form = rng.random()
    if form < 0.04:
        return "NaN"
    x = rng.uniform(low, high)
    if high <= 1:
        return f"{x:.6f}" if form < 0.9 else f"{x:.3e}"
    return str(int(x)) if form < 0.6 else f"{x:.3f}"


def answer(
    seed: int,
    *,
    hosts: int = 2,
    gpus: int = 3,
    points: int = 40,
    host_label: str = "Hostname",
    extra: dict | None = None,
    series_extra: list[dict] | None = None,
    gaps: bool = True,
) -> dict:
    """A clean answer: every field of every GPU of every host, 10 s apart, a few points
    missing here and there (scrapes that failed), NaN values, some FB_RESERVED and FB_TOTAL.
    Without `gaps`: every field of every GPU at every time (FB_RESERVED on all, no FB_TOTAL)."""
    rng = random.Random(seed)
    result = []
    for h in range(hosts):
        for g in range(gpus):
            labels = {
                "gpu": str(g),
                "UUID": f"GPU-{seed:04d}-{h}-{g}",
                "pci_bus_id": f"00000000:{0x18 + g:02X}:00.0",
                "device": f"nvidia{g}",
                "modelName": "NVIDIA H100 80GB HBM3",
                host_label: f"node{h}:9400" if host_label == "instance" else f"node{h}",
                **(extra or {}),
            }
            fields = dict(FIELDS)
            if (h + g) % 2 or not gaps:
                fields["DCGM_FI_DEV_FB_RESERVED"] = (0, 600)
            if h == 1 and g == 0 and gaps:
                fields["DCGM_FI_DEV_FB_TOTAL"] = (80000, 81559)
            for name, (low, high) in fields.items():
                late = gaps and name.endswith("UTIL")  # a scrape half a second late, now and then
                values = [
                    [T0 + 10 * k + (0.5 if late and k % 7 == 0 else 0), _value(rng, low, high)]
                    for k in range(points)
                    if rng.random() > (0.03 if gaps else 0)
                ]
                result.append({"metric": {"__name__": name, **labels}, "values": values})
    result += series_extra or []
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def both_ways(tmp_path: Path, path: Path, monkeypatch: pytest.MonkeyPatch, *, scrapes: bool = False, **options: object):
    """The file stored with the fast way off, on, and (answers) read in this thread rather than
    ahead, as a live Prometheus pull does; and whether each fast read took the file."""
    reader, fmt = ("read_scrapes", "dcgm_prom") if scrapes else ("read", "dcgm_query_range")
    taken = []
    read = getattr(dcgm_fast, reader)

    def spy(*args, **kwargs):
        typed = read(*args, **kwargs)
        taken.append(typed is not None)
        return typed

    with monkeypatch.context() as m:
        m.setattr(dcgm_fast, reader, lambda *a, **k: None)
        exact = telemetry_stored(tmp_path / "exact.duckdb", path, fmt, **options)
    with monkeypatch.context() as m:
        m.setattr(dcgm_fast, reader, spy)
        fast = telemetry_stored(tmp_path / "fast.duckdb", path, fmt, **options)
        m.setattr(read_ahead, "READ_AHEAD_MAX_BYTES", 0)
        inline = telemetry_stored(tmp_path / "inline.duckdb", path, fmt, **options)
    return exact, fast, inline, taken


def _mig(labels: dict) -> dict:
    return {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", **labels, "GPU_I_ID": "1"}, "values": [[T0, "100"]]}


CASES = {
    # name: (answer, options, fast way expected)
    "clean": (lambda: answer(1), {}, True),
    "no_gaps": (lambda: answer(21, gaps=False), {}, True),  # every measure at every time: lined up, no pivot
    "instance_label": (lambda: answer(2, host_label="instance"), {}, True),
    "kubernetes_node": (lambda: answer(3, host_label="kubernetes_node"), {}, True),
    "exporter_pod": (lambda: answer(4, extra={"pod": "dcgm-exporter-x7z", "namespace": "gpu-operator"}), {}, True),
    "unknown_metric_ignored": (
        lambda: answer(5, series_extra=[{"metric": {"__name__": "up", "Hostname": "node0"}, "values": [[T0, "1"]]}]),
        {},
        True,
    ),
    "out_of_range": (
        lambda: answer(
            6,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "5", "Hostname": "node0"},
                    "values": [[T0, "101"]],
                }
            ],
        ),
        {},
        False,
    ),
    "infinite": (
        lambda: answer(
            7,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": "6", "Hostname": "node0"},
                    "values": [[T0, "+Inf"]],
                }
            ],
        ),
        {},
        False,
    ),
    "duplicate_series": (
        lambda: answer(
            8,
            series_extra=[
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_GPU_UTIL",
                        "gpu": "0",
                        "Hostname": "node0",
                        "UUID": "GPU-0008-0-0",
                    },
                    "values": [[T0, "3"], [T0 + 10, "4"]],
                }
            ],
        ),
        {},
        False,
    ),
    "workload": (lambda: answer(9, extra={"pod": "train-abc", "namespace": "team-a", "container": "main"}), {}, False),
    "hpc_job": (lambda: answer(10, extra={"hpc_job": "12345"}), {}, False),
    "mig": (
        lambda: answer(11, series_extra=[_mig({"gpu": "0", "Hostname": "node0", "UUID": "GPU-0011-0-0"})]),
        {},
        False,
    ),
    # Xid series (the default dcgm-exporter's): events where a value first shows or changes
    "xid": (
        lambda: answer(
            12,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "0", "Hostname": "node0"},
                    "values": [
                        [T0, "0"],
                        [T0 + 10, "79"],
                        [T0 + 20, "79"],
                        [T0 + 30, "NaN"],
                        [T0 + 40, "79"],
                        [T0 + 50, "0"],
                        [T0 + 60, "13"],
                        [T0 + 70, "48"],
                    ],
                },
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_XID_ERRORS",
                        "gpu": "1",
                        "Hostname": "node1",
                        "UUID": "GPU-other",
                    },
                    "values": [[T0 + k * 10, "0"] for k in range(30)],
                },
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_XID_ERRORS",
                        "gpu": "9",
                        "Hostname": "node1",
                    },  # a GPU with nothing else
                    "values": [[T0, "31"]],
                },
            ],
        ),
        {},
        True,
    ),
    "xid_fractional": (
        lambda: answer(
            18,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "0", "Hostname": "node0"},
                    "values": [[T0, "79.5"]],
                }
            ],
        ),
        {},
        False,
    ),
    "xid_twice": (
        lambda: answer(
            19,
            series_extra=[
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_XID_ERRORS",
                        "gpu": "0",
                        "Hostname": "node0",
                        "err_code": str(k),
                    },
                    "values": [[T0, str(k)]],
                }
                for k in (43, 79)
            ],
        ),
        {},
        False,
    ),
    "two_uuids": (
        lambda: answer(
            13,
            series_extra=[
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_FB_RESERVED",
                        "gpu": "0",
                        "Hostname": "node0",
                        "UUID": "GPU-other",
                    },
                    "values": [[T0, "10"]],
                }
            ],
        ),
        {},
        False,
    ),
    "value_with_spaces": (
        lambda: answer(
            14,
            series_extra=[
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_FB_RESERVED",
                        "gpu": "0",
                        "Hostname": "node0",
                        "UUID": "GPU-0014-0-0",
                        "pci_bus_id": "00000000:18:00.0",
                        "device": "nvidia0",
                        "modelName": "NVIDIA H100 80GB HBM3",
                    },
                    "values": [[T0, " 12 "]],
                }
            ],
        ),
        {},
        False,
    ),
    # past the sanity bounds (issue #26): the exact way's rejects, whichever way is tried first
    "gpu_past_bound": (
        lambda: answer(
            22,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "5000", "Hostname": "node0"},
                    "values": [[T0, "50"]],
                }
            ],
        ),
        {},
        False,
    ),
    "sample_in_2999": (
        lambda: answer(
            23,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "node9"},
                    "values": [[T0, "5"], [32_503_680_000, "50"]],
                }
            ],
        ),
        {},
        False,
    ),
    "xid_past_bounds": (
        lambda: answer(
            24,
            series_extra=[
                {
                    "metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "5000", "Hostname": "node0"},
                    "values": [[T0, "79"]],
                },
                {
                    "metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "0", "Hostname": "node0"},
                    "values": [[T0, "13"], [32_503_680_000, "79"]],
                },
            ],
        ),
        {},
        False,
    ),
    "bound_option": (lambda: answer(25), {"max_gpus_per_node": 2}, False),  # GPU 2 of 0-2 past a bound of 2
    "host_option": (lambda: answer(15, hosts=1), {"host": "renamed"}, False),
    "no_host_label": (lambda: answer(16, hosts=1, host_label="node"), {}, False),
    "unsorted_times": (
        lambda: answer(
            17,
            series_extra=[
                {
                    "metric": {
                        "__name__": "DCGM_FI_DEV_FB_RESERVED",
                        "gpu": "1",
                        "Hostname": "node1",
                        "UUID": "GPU-0017-1-1",
                    },
                    "values": [[T0 + 10, "1"], [T0, "2"]],
                }
            ],
        ),
        {},
        False,
    ),
}


@pytest.mark.parametrize("case", keep_by_default(CASES, {"clean", "xid", "out_of_range", "mig", "host_option"}))
def test_fast_and_exact_ways_store_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    make, options, fast_expected = CASES[case]
    path = tmp_path / "node-metrics.json"
    path.write_text(json.dumps(make()))
    exact, fast, inline, taken = both_ways(tmp_path, path, monkeypatch, **options)
    for name in exact:
        assert fast[name] == exact[name], name
        assert inline[name] == exact[name], name
    # (with --host the fast way is not even tried)
    assert all(t == fast_expected for t in taken) and (taken or not fast_expected), taken
    if fast_expected:
        assert exact["ingested_files"][0][1] > 200 and exact["rejects"] == []


def test_values_past_the_bounds_are_rejected_with_their_reasons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #26: a DCGM sample in 3000, or of a GPU index past the bound of GPUs per node, is a
    reject with its reason, an Xid value's too (no event is made of it); the rest is stored."""
    from datetime import UTC, datetime

    path = tmp_path / "node-metrics.json"
    path.write_text(json.dumps(CASES["xid_past_bounds"][0]()))
    exact, fast, _, taken = both_ways(tmp_path, path, monkeypatch)
    assert fast == exact and taken and not any(taken)
    assert sorted(reason for _, reason, _ in exact["rejects"]) == [
        "Xid at 3000-01-01T00:00:00 UTC is outside the years gca reads (1990-2059)",
        "Xid of GPU index 5000: over the bound of 1,024 GPUs per node (--max-gpus-per-node)",
    ]
    at = datetime.fromtimestamp(T0, UTC).replace(tzinfo=None)
    assert [e[:5] for e in exact["gpu_events"]] == [(at, "node0", 0, "xid", "Xid 13")]
    path.write_text(json.dumps(CASES["sample_in_2999"][0]()))
    exact, _, _, _ = both_ways(tmp_path / "2999", path, monkeypatch)
    assert [reason for _, reason, _ in exact["rejects"]] == [
        "time 3000-01-01T00:00:00 UTC is outside the years gca reads (1990-2059)"
    ]
    assert sorted(r[:3] for r in exact["gpu_samples"] if r[1] == "node9") == [(at, "node9", 0)]


def test_xid_events_are_where_a_value_first_shows_or_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """By hand from the "xid" case: node0 GPU 0 reads 0, 79, 79, NaN, 79, 0, 13, 48 (the NaN
    scrape changes nothing); node1 GPU 1 only 0; node1 GPU 9 reads 31 once."""
    path = tmp_path / "node-metrics.json"
    path.write_text(json.dumps(CASES["xid"][0]()))
    exact, fast, _, taken = both_ways(tmp_path, path, monkeypatch)
    from datetime import UTC, datetime

    def at(k: int) -> datetime:
        return datetime.fromtimestamp(T0 + 10 * k, UTC).replace(tzinfo=None)

    expected = [
        (at(1), "node0", 0, "xid", "Xid 79"),
        (at(6), "node0", 0, "xid", "Xid 13"),
        (at(7), "node0", 0, "xid", "Xid 48"),
        (at(0), "node1", 9, "xid", "Xid 31"),
    ]
    for stored in (exact, fast):
        assert sorted(e[:5] for e in stored["gpu_events"]) == sorted(expected)
    assert all(taken)


@pytest.mark.parametrize("scrapes", [False, True])
def test_complete_files_line_measures_up_without_a_pivot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scrapes: bool
) -> None:
    """The usual file has every measure of every GPU at every time: its measures are lined up
    side by side (the no_gaps cases check they store what the exact way stores)."""
    from gpucluster_analysis.ingest.gpu.dcgm import METRICS, _scrape_series

    doc = answer(47, gaps=False)
    path = tmp_path / ("node.prom" if scrapes else "node.json")
    path.write_text(scrape_text(doc) if scrapes else json.dumps(doc))
    import polars as pl

    def no_pivot(*args, **kwargs):
        raise AssertionError("pivoted")

    monkeypatch.setattr(pl.DataFrame, "pivot", no_pivot)
    typed = dcgm_fast.read_scrapes(path, _scrape_series) if scrapes else dcgm_fast.read(path, METRICS, None)
    assert typed is not None and typed.rows.height == 2 * 3 * 40


def test_unnamed_series_take_the_file_names_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = answer(20, hosts=1, gpus=2)
    doc["data"]["result"] = [s for s in doc["data"]["result"] if s["metric"]["__name__"] == "DCGM_FI_DEV_GPU_UTIL"]
    for s in doc["data"]["result"]:
        del s["metric"]["__name__"]
    path = tmp_path / "DCGM_FI_DEV_GPU_UTIL.json"
    path.write_text(json.dumps(doc))
    exact, fast, inline, taken = both_ways(tmp_path, path, monkeypatch)
    assert fast == exact == inline and all(taken)
    assert exact["gpu_samples"]


@pytest.mark.parametrize(
    "name",
    keep_by_default(
        sorted(p.name for p in DATA.glob("*.json")) + sorted(f"real/{p.name}" for p in (DATA / "real").glob("*.json")),
        {"dcgm_query_range.json"},
    ),
)
def test_every_json_capture_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    exact, fast, inline, _ = both_ways(tmp_path, DATA / name, monkeypatch)
    assert fast == exact == inline


# ----------------------------------------------------------------- dcgm-exporter scrape files


def scrape_text(doc: dict, *, extra_lines: dict[int, list[str]] | None = None) -> str:
    """The answer's points as dcgm-exporter scrapes under `# time:` lines (integer times only),
    with the exporter's HELP/TYPE lines and another exporter's metric beside them."""
    by_time: dict[int, list[str]] = {}
    for s in doc["data"]["result"]:
        metric = dict(s["metric"])
        name = metric.pop("__name__")
        labels = ",".join(f'{k}="{v}"' for k, v in metric.items())
        for ts, value in s["values"]:
            if float(ts).is_integer():
                by_time.setdefault(int(ts), []).append(f"{name}{{{labels}}} {value}")
    out = ["$ while sleep 10; do date +'# time: %s'; curl -s node:9400/metrics; done"]
    for k, ts in enumerate(sorted(by_time)):
        out.append(f"# time: {ts}")
        out += ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
        out += by_time[ts] + ["go_goroutines 12"] + (extra_lines or {}).get(k, [])
    return "\n".join(out) + "\n"


SCRAPE_CASES = {
    "clean": (lambda: scrape_text(answer(31)), True),
    "no_gaps": (lambda: scrape_text(answer(46, gaps=False)), True),
    "exporter_pod": (lambda: scrape_text(answer(32, extra={"pod": "dcgm-exporter-1"})), True),
    "workload": (lambda: scrape_text(answer(33, extra={"pod": "train", "namespace": "a"})), False),
    "own_timestamp": (
        lambda: scrape_text(
            answer(34), extra_lines={2: ['DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="node0"} 5 1784016000000']}
        ),
        False,
    ),
    "escaped_label": (
        lambda: scrape_text(
            answer(35), extra_lines={1: ['DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="node0",note="a \\"b\\""} 5']}
        ),
        False,
    ),
    "iso_time": (lambda: scrape_text(answer(36)).replace("# time: 1784016010", "# time: 2026-07-14T08:00:10Z"), False),
    "untimed_first": (lambda: 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="node0"} 5\n' + scrape_text(answer(37)), False),
    "xid": (
        lambda: scrape_text(
            answer(38),
            extra_lines={
                k: [
                    f'DCGM_FI_DEV_XID_ERRORS{{gpu="0",Hostname="node0",UUID="GPU-0038-0-0"}} {x}',
                    'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="node0",UUID="GPU-0038-0-1"} 0',
                ]
                for k, x in enumerate(["0", "79", "79", "NaN", "79", "0", "13", "48"])
            },
        ),
        True,
    ),
    "xid_fractional": (
        lambda: scrape_text(
            answer(41), extra_lines={2: ['DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="node0",UUID="GPU-0041-0-0"} 1.5']}
        ),
        False,
    ),
    "control_byte_in_help": (
        lambda: scrape_text(answer(42)).replace("GPU utilization (in %).", "GPU \x07utilization", 1),
        False,
    ),
    "two_braces": (
        lambda: scrape_text(
            answer(43), extra_lines={1: ['DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="node0",note="}"} 5']}
        ),
        False,
    ),
    "indented": (
        lambda: scrape_text(
            answer(44), extra_lines={1: ['  DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="node0",UUID="GPU-0044-0-0"} 5']}
        ),
        False,
    ),
    "crlf": (lambda: scrape_text(answer(45)).replace("\n", "\r\n"), True),
    "out_of_range": (
        lambda: scrape_text(answer(39), extra_lines={3: ['DCGM_FI_DEV_GPU_UTIL{gpu="7",Hostname="node1"} 250']}),
        False,
    ),
    "gpu_past_bound": (
        lambda: scrape_text(answer(48), extra_lines={2: ['DCGM_FI_DEV_GPU_UTIL{gpu="5000",Hostname="node1"} 50']}),
        False,
    ),
    "time_in_2999": (lambda: scrape_text(answer(49)).replace("# time: 1784016010", "# time: 32503680000"), False),
    "scraped_twice": (
        lambda: scrape_text(
            answer(40), extra_lines={4: ['DCGM_FI_DEV_FB_RESERVED{gpu="2",Hostname="node1",UUID="GPU-0040-1-2"} 7'] * 2}
        ),
        False,
    ),
}


@pytest.mark.parametrize("case", keep_by_default(SCRAPE_CASES, {"clean", "crlf", "own_timestamp", "scraped_twice"}))
def test_scrapes_fast_and_exact_ways_store_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    make, fast_expected = SCRAPE_CASES[case]
    path = tmp_path / "node-metrics.prom"
    path.write_text(make())
    exact, fast, inline, taken = both_ways(tmp_path, path, monkeypatch, scrapes=True)
    for name in exact:
        assert fast[name] == exact[name], name
        assert inline[name] == exact[name], name
    assert taken and all(t == fast_expected for t in taken), taken
    if fast_expected:
        assert exact["ingested_files"][0][1] > 200 and exact["rejects"] == []


@pytest.mark.parametrize(
    "name",
    keep_by_default(
        sorted(p.name for p in DATA.glob("*.prom")) + sorted(f"real/{p.name}" for p in (DATA / "real").glob("*.prom")),
        {"real/gsrh100-074-mig.prom"},
    ),
)
def test_every_scrape_capture_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Real captures are single scrapes without `# time:` lines (timed by --time or the file
    name), so the fast way declines them: this guards against it taking one it cannot store alike."""
    exact, fast, inline, _ = both_ways(tmp_path, DATA / name, monkeypatch, scrapes=True, zone="UTC")
    assert fast == exact == inline


def test_a_file_over_the_size_bound_takes_the_exact_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_analysis.ingest.gpu.dcgm import METRICS, _scrape_series

    answer_file, scrape_file = tmp_path / "node0.json", tmp_path / "node0.prom"
    answer_file.write_text(json.dumps(answer(50, hosts=1)))
    scrape_file.write_text(scrape_text(answer(50, hosts=1)))
    assert dcgm_fast.read(answer_file, METRICS, None) is not None
    assert dcgm_fast.read_scrapes(scrape_file, _scrape_series) is not None
    monkeypatch.setattr(dcgm_fast, "MAX_BYTES", 1000)
    assert dcgm_fast.read(answer_file, METRICS, None) is None
    assert dcgm_fast.read_scrapes(scrape_file, _scrape_series) is None
