"""GPU telemetry ingest: nvidia-smi CSV, dmon, XML; DCGM scrapes and query_range exports.

Fixtures in tests/data/gpu/ are hand-written after real outputs (every quirk of
../shared/docs/input-formats.md sections 2-5). Expected values are worked out by hand
in the comments: Europe/Zurich is UTC+2 in July (CEST) and on the first 02:30 of
2026-10-25; America/New_York is UTC-5 in January; epoch 1700000000 is
2023-11-14 22:13:20 UTC.
"""

from __future__ import annotations

import csv
import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ExitCode, InputError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.ingest.gpu.dcgm import parse_sample, time_from_name
from gpucluster_analysis.ingest.gpu.telemetry import host_from_name, parse_time_option
from gpucluster_analysis.report.build import build_report
from tests.marks import keep_by_default
from tests.store_helpers import assert_loaded, ingest, rows, write

DATA = Path(__file__).parent / "data" / "gpu"
H100 = "NVIDIA H100 80GB HBM3"


def samples(db: Path, machine: str) -> list[tuple]:
    return rows(
        db, "SELECT sample_at, gpu_index, util_pct FROM gpu_samples WHERE machine_id = ? ORDER BY 1, 2", machine
    )


def details(db: Path, machine: str) -> list[tuple]:
    return rows(
        db,
        "SELECT sample_at, gpu_index, gpu_instance_id, mem_util_pct, mem_used_mib, mem_total_mib, "
        "round(CAST(power_w AS DOUBLE), 2), temp_c,"
        " sm_clock_mhz, round(CAST(gr_engine_active AS DOUBLE), 2), throttle_reasons FROM gpu_sample_details "
        "WHERE machine_id = ?"
        " ORDER BY 1, 2, 3 NULLS FIRST",
        machine,
    )


def profile(db: Path, machine: str) -> list[tuple]:
    """DCGM's profiling fields of each detail row, ratios rounded to 6 places (stored as REAL)."""
    return rows(
        db,
        "SELECT gpu_index, gpu_instance_id, round(CAST(sm_active AS DOUBLE), 6), round(CAST(sm_occupancy AS "
        "DOUBLE), 6), round(CAST(tensor_active AS DOUBLE), 6),"
        " round(CAST(fp64_active AS DOUBLE), 6), round(CAST(fp32_active AS DOUBLE), 6), "
        "round(CAST(fp16_active AS DOUBLE), 6), round(CAST(dram_active AS DOUBLE), 6),"
        " pcie_rx_bytes, pcie_tx_bytes, nvlink_tx_bytes, nvlink_rx_bytes"
        " FROM gpu_sample_details WHERE machine_id = ? ORDER BY sample_at, gpu_index, gpu_instance_id NULLS FIRST",
        machine,
    )


def workloads(db: Path) -> list[tuple]:
    return rows(
        db,
        "SELECT machine_id, gpu_index, gpu_instance_id, first_at, last_at, pod, namespace, container, hpc_job"
        " FROM gpu_workload_labels ORDER BY ALL",
    )


def rejects(db: Path, name: str) -> list[tuple]:
    return rows(
        db,
        "SELECT r.line, r.reason FROM rejects r JOIN ingested_files f USING (file_id) "
        "WHERE f.path LIKE ? ORDER BY r.line NULLS LAST, r.reason",
        f"%/{name}",
    )


def t(*parts: int) -> datetime:
    return datetime(*parts)


ok = assert_loaded


# ------------------------------------------------------------------ nvidia-smi --query-gpu CSV


@pytest.fixture(scope="module")
def csv_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("csv") / "s.duckdb"
    (report,) = ingest(db, DATA / "nvidia-smi-node01.csv", zone="Europe/Zurich")
    ok(report, 4, 4)
    return db


def test_csv_units_na_spellings_and_repeated_header(csv_store: Path) -> None:
    # local 08:12:38.696 CEST = 06:12:38.696 UTC; GPU 1's utilization is [N/A] and N/A: NULL
    assert samples(csv_store, "node01") == [
        (t(2026, 7, 14, 6, 12, 38, 696000), 0, 26.0),
        (t(2026, 7, 14, 6, 12, 38, 698000), 1, None),
        (t(2026, 7, 14, 6, 12, 39, 701000), 0, 100.0),  # after the repeated header
        (t(2026, 7, 14, 6, 12, 39, 703000), 1, None),
    ]
    assert details(csv_store, "node01") == [
        # 0x4 = sw_power_cap; 0x1 = gpu_idle; 0x0 = none; 0x44 = 0x40 hw_thermal_slowdown + 0x4
        (t(2026, 7, 14, 6, 12, 38, 696000), 0, None, 4.0, 81559.0, 81920.0, 433.78, 56.0, 1980.0, None, "sw_power_cap"),
        (t(2026, 7, 14, 6, 12, 38, 698000), 1, None, None, 12.0, 81920.0, None, 41.0, 1980.0, None, "gpu_idle"),
        (t(2026, 7, 14, 6, 12, 39, 701000), 0, None, 35.0, 81559.0, 81920.0, 690.1, 61.0, 1755.0, None, "none"),
        # [Unknown Error], [Insufficient Permissions], [Requested functionality has been deprecated]: NULL
        (
            t(2026, 7, 14, 6, 12, 39, 703000),
            1,
            None,
            None,
            None,
            81920.0,
            None,
            40.0,
            1980.0,
            None,
            "sw_power_cap,hw_thermal_slowdown",
        ),
    ]


def test_csv_rejects_name_their_lines_and_tool_errors_are_events(csv_store: Path) -> None:
    assert rejects(csv_store, "nvidia-smi-node01.csv") == [
        (8, "GPU utilization outside 0-100: 101 %"),
        (9, "6 fields where the header has 12"),
        (10, "unreadable time 2026/07/14 08:12:4x.000"),
        (11, "unreadable memory used 1 GiB"),  # a unit that would need converting: never guessed
    ]
    # at the time of the last sample before it (line 3)
    assert rows(csv_store, "SELECT event_at, machine_id, kind, detail, line FROM gpu_events") == [
        (
            t(2026, 7, 14, 6, 12, 38, 698000),
            "node01",
            "tool_error",
            "Unable to determine the device handle for GPU 0000:86:00.0: Unknown Error",
            4,
        ),
    ]
    assert rows(csv_store, "SELECT gpu_index, uuid, pci_bus_id, model FROM gpu_devices ORDER BY 1") == [
        (0, None, "0000:3b:00.0", H100),
        (1, None, "0000:5e:00.0", H100),
    ]
    assert rows(csv_store, "SELECT format, time_zone FROM ingested_files") == [("nvsmi_csv", "Europe/Zurich")]


NODE02_COLUMNS = ("timestamp", "pci.bus_id", "uuid", "utilization.gpu [%]", "memory.used [MiB]", "memory.total [MiB]")


def test_csv_without_header_needs_columns_and_numbers_gpus_by_pci_order(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (failed,) = ingest(db, DATA / "node02_gpu.log")
    assert failed.status == "failed" and "--columns" in failed.message and "node02_gpu.log:1" in failed.message
    (report,) = ingest(db, DATA / "node02_gpu.log", zone="America/New_York", columns=NODE02_COLUMNS)
    ok(report, 4, 0)
    # nounits values; EST local + 5 h; no index field: PCI bus order, 0000:18:00.0 -> 0, 0000:af:00.0 -> 1
    assert samples(db, "node02") == [
        (t(2026, 1, 11, 4, 59, 59, 500000), 1, 75.0),
        (t(2026, 1, 11, 4, 59, 59, 510000), 0, 5.0),
        (t(2026, 1, 11, 5, 0, 0, 500000), 1, 80.0),
        (t(2026, 1, 11, 5, 0, 0, 510000), 0, 0.0),
    ]
    assert rows(db, "SELECT gpu_index, uuid, pci_bus_id FROM gpu_devices ORDER BY 1") == [
        (0, "GPU-aaaaaaaa-0000-0000-0000-000000000001", "0000:18:00.0"),
        (1, "GPU-bbbbbbbb-0000-0000-0000-000000000002", "0000:af:00.0"),
    ]
    # A later log naming GPUs by UUID alone gets the indices gpu_devices knows for the host.
    apps = tmp_path / "gpu-by-uuid.csv"
    apps.write_text(
        "timestamp, uuid, utilization.gpu [%]\n"
        "2026/01/11 00:01:00.000, GPU-bbbbbbbb-0000-0000-0000-000000000002, 50 %\n"
        "2026/01/11 00:01:00.000, GPU-ffffffff-0000-0000-0000-00000000000f, 50 %\n"
    )
    (report,) = ingest(db, apps, zone="America/New_York", host="node02")
    ok(report, 1, 1)
    assert samples(db, "node02")[-1] == (t(2026, 1, 11, 5, 1), 1, 50.0)
    assert rejects(db, "gpu-by-uuid.csv") == [
        (
            3,
            "GPU GPU-ffffffff-0000-0000-0000-00000000000f has no index in this file: first ingest one that pairs "
            "it with its index (e.g. nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv)",
        ),
    ]


def test_csv_new_driver_fields_wddm_and_individual_reasons(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    # no timestamp field: a single snapshot, timed by --time
    (report,) = ingest(db, DATA / "node03.csv", time="2026-07-14T10:00:00Z")
    ok(report, 2, 0)
    assert samples(db, "node03") == [(t(2026, 7, 14, 10), 0, 13.0), (t(2026, 7, 14, 10), 1, 0.0)]
    # WDDM: memory.used [N/A]; power.draw.instant (new drivers); clocks_event_reasons.* fields
    assert details(db, "node03") == [
        (t(2026, 7, 14, 10), 0, None, None, None, 8192.0, 35.5, None, None, None, "sw_power_cap,hw_slowdown"),
        (t(2026, 7, 14, 10), 1, None, None, None, 8192.0, 9.1, None, None, None, "gpu_idle"),
    ]


def test_csv_file_without_host_or_time_fails_naming_the_option(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    generic = tmp_path / "nvidia-smi.csv"
    generic.write_text((DATA / "nvidia-smi-node01.csv").read_text())
    (report,) = ingest(db, generic)
    assert report.status == "failed" and "--host" in report.message
    (report,) = ingest(db, DATA / "node03.csv")  # no timestamp field and no --time
    assert report.status == "failed" and "--time" in report.message
    assert rows(db, "SELECT count(*) FROM gpu_samples") == [(0,)]


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("node01.csv", "node01"),
        ("nvidia-smi-node01.csv", "node01"),
        ("node01_gpu.log", "node01"),
        ("gpu17.cluster.local.csv.gz", "gpu17.cluster.local"),
        ("node01_2026-07-14.csv", "node01"),
        ("node01.dmon.log", "node01"),
        ("dcgm-node01-1700000000.prom", "node01"),
        ("nvidia-smi.csv", None),
        ("metrics.prom", None),
        ("1700000000.prom", None),
        ("gpu.log", None),
        ("gpu-st-ml-1.csv", "gpu-st-ml-1"),
        ("gpu-a1_gpu.log", "gpu-a1"),
        ("nvidia-smi-gpu-a1.csv", "gpu-a1"),
    ],
)
def test_host_from_file_name(name: str, host: str | None) -> None:
    assert host_from_name(Path(name)) == host


# ------------------------------------------------------------------ nvidia-smi dmon


def test_dmon_old_columns_without_times_need_time_and_interval(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (failed,) = ingest(db, DATA / "node04.dmon.log")
    assert failed.status == "failed" and "--time" in failed.message and "--interval" in failed.message
    (failed,) = ingest(db, DATA / "node04.dmon.log", time="2026-03-01T12:00:00Z")
    assert failed.status == "failed" and "--interval" in failed.message
    (report,) = ingest(db, DATA / "node04.dmon.log", time="2026-03-01T12:00:00Z", interval_s=5.0)
    ok(report, 4, 0)
    # the k-th row of each GPU is at start + 5 k seconds
    assert samples(db, "node04") == [
        (t(2026, 3, 1, 12), 0, 0.0),
        (t(2026, 3, 1, 12), 1, 97.0),
        (t(2026, 3, 1, 12, 0, 5), 0, 12.0),
        (t(2026, 3, 1, 12, 0, 5), 1, 99.0),
    ]
    # old `temp` is gtemp; pwr W, mem %, pclk MHz
    assert details(db, "node04")[1] == (t(2026, 3, 1, 12), 1, None, 42.0, None, None, 44.0, 50.0, 1530.0, None, None)


def test_dmon_new_columns_with_dates_repeated_header_and_dashes(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "node05-dmon.log", zone="Europe/Zurich")
    ok(report, 3, 1)
    # 02:30 on 2026-10-25 happens twice in Zurich: the first (CEST, UTC+2) -> 00:30 UTC
    assert samples(db, "node05") == [
        (t(2026, 10, 25, 0, 30), 0, 100.0),
        (t(2026, 10, 25, 0, 30), 1, None),  # sm `-` (MIG)
        (t(2026, 10, 25, 0, 30, 1), 0, 99.0),
    ]
    assert details(db, "node05")[1] == (
        t(2026, 10, 25, 0, 30),
        1,
        None,
        None,
        None,
        None,
        70.0,
        35.0,
        345.0,
        None,
        None,
    )
    assert rejects(db, "node05-dmon.log") == [(9, "unreadable time 20261025 02:30:0x")]
    assert rows(db, "SELECT event_at, kind, detail, line FROM gpu_events") == [
        (t(2026, 10, 25, 0, 30), "tool_error", "Not supported on the device(s)", 5),
    ]


def test_pmon_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    (report,) = ingest(tmp_path / "s.duckdb", DATA / "node09-pmon.log", format_name="nvsmi_dmon")
    assert report.status == "failed" and "pmon" in report.message and "node09-pmon.log:1" in report.message


# ------------------------------------------------------------------ nvidia-smi -q -x


def test_xml_v10_and_v12_renames_mig_and_concatenated_snapshots(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    v10, v12 = ingest(db, DATA / "node06.xml", DATA / "node07.xml", zone="UTC")
    ok(v10, 2, 0)
    ok(v12, 5, 0)  # 2 snapshots: parent + 2 MIG instances, parent + 1
    assert samples(db, "node06") == [(t(2019, 10, 2, 1, 13, 19), 0, 3.0), (t(2019, 10, 2, 1, 13, 19), 1, 88.0)]
    # v10: power_readings/power_draw, clocks_throttle_reasons; the second GPU's power is N/A
    assert details(db, "node06") == [
        (t(2019, 10, 2, 1, 13, 19), 0, None, 1.0, 2.0, 8119.0, 7.02, 32.0, 139.0, None, "gpu_idle"),
        (t(2019, 10, 2, 1, 13, 19), 1, None, None, 7000.0, 8119.0, None, 71.0, 1911.0, None, None),
    ]
    # v12 MIG: the parent's gpu_util is N/A; each MIG device is a row keyed by its GPU instance id
    assert samples(db, "node07") == [(t(2026, 7, 14, 8, 12, 53), 0, None), (t(2026, 7, 14, 8, 13, 53), 0, None)]
    assert details(db, "node07") == [
        (t(2026, 7, 14, 8, 12, 53), 0, None, None, 14379.0, 40960.0, 67.92, 44.0, 1410.0, None, "sw_power_cap"),
        (t(2026, 7, 14, 8, 12, 53), 0, 1, None, 14366.0, 19968.0, None, None, None, None, None),
        (t(2026, 7, 14, 8, 12, 53), 0, 5, None, 13.0, 9856.0, None, None, None, None, None),
        # gpu_power_readings/power_draw N/A there: instant_power_draw
        (t(2026, 7, 14, 8, 13, 53), 0, None, None, 113.0, 40960.0, 55.0, 39.0, None, None, None),
        (t(2026, 7, 14, 8, 13, 53), 0, 1, None, 100.0, 19968.0, None, None, None, None, None),
    ]
    assert rows(db, "SELECT machine_id, gpu_index, uuid, pci_bus_id FROM gpu_devices ORDER BY 1, 2") == [
        ("node06", 0, "GPU-90e3dab0-b59d-8bf6-d909-d4fab8d2f29b", "0000:01:00.0"),
        ("node06", 1, "GPU-11111111-2222-3333-4444-555555555555", "0000:02:00.0"),
        ("node07", 0, "GPU-feba7e40-d724-01ff-b00f-3a439a28a6c7", "0000:10:00.0"),
    ]


def test_xml_broken_snapshots_are_rejects_and_partial_snapshots_need_known_gpus(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "node08.xml", zone="UTC")
    ok(report, 1, 2)
    assert rejects(db, "node08.xml") == [
        (19, "unreadable XML snapshot: mismatched tag: line 7, column 2"),
        (23, "snapshot cut off before </nvidia_smi_log>"),
    ]
    # nvidia-smi -q -x -i 1: one <gpu> of two attached; its position is not its index
    ingest(db, DATA / "node06.xml", zone="UTC")
    text = (DATA / "node06.xml").read_text()
    first_gpu = text[text.index("\t<gpu ") : text.index("\t<gpu ", text.index("\t<gpu ") + 1)]
    partial = tmp_path / "partial.xml"
    partial.write_text(text.replace(first_gpu, "").replace("01:13:19", "01:14:19"))
    unknown = tmp_path / "other.xml"
    unknown.write_text(text.replace(first_gpu, "").replace("GPU-1111", "GPU-9999").replace("02:00.0", "03:00.0"))
    ok(ingest(db, partial, host="node06", zone="UTC")[0], 1, 0)
    assert samples(db, "node06")[-1] == (t(2019, 10, 2, 1, 14, 19), 1, 88.0)  # index 1, from gpu_devices
    ok(ingest(db, unknown, host="node06", zone="UTC")[0], 0, 1)


# ------------------------------------------------------------------ DCGM exporter scrapes


def test_dcgm_scrape_with_time_comments_xid_and_rejects(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "r6i3n0.prom")
    ok(report, 3, 2)
    assert samples(db, "r6i3n0") == [
        (t(2026, 7, 14, 6), 0, 87.0),
        (t(2026, 7, 14, 6), 1, 0.0),
        (t(2026, 7, 14, 6, 0, 30), 0, 91.0),  # GPU 1's 150 % is rejected
    ]
    # FB total = used 30000 + free 2000 + reserved 768 = 32768 MiB; reasons 4 = sw_power_cap
    assert details(db, "r6i3n0") == [
        (t(2026, 7, 14, 6), 0, None, None, 30000.0, 32768.0, 251.25, 66.0, 1530.0, None, "sw_power_cap"),
        (t(2026, 7, 14, 6), 1, None, None, None, None, None, None, 135.0, None, None),
    ]
    assert rejects(db, "r6i3n0.prom") == [
        (23, "GPU utilization outside 0-100: 150"),
        (25, "unreadable DCGM sample: unreadable labels"),
    ]
    # Xid 0 is no error; 79 repeated by the next scrape is one event
    assert rows(db, "SELECT event_at, gpu_index, kind, detail, line FROM gpu_events") == [
        (t(2026, 7, 14, 6, 0, 30), 1, "xid", "Xid 79", 24),
    ]
    assert rows(db, "SELECT gpu_index, pci_bus_id, model FROM gpu_devices ORDER BY 1") == [
        (0, "0000:1a:00.0", "Tesla V100-SXM2-32GB"),
        (1, "0000:1c:00.0", "Tesla V100-SXM2-32GB"),
    ]


def test_dcgm_relabelled_lowercase_old_names_and_mig(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (failed,) = ingest(db, DATA / "dcgm-relabelled.prom")
    assert failed.status == "failed" and "--time" in failed.message
    (report,) = ingest(db, DATA / "dcgm-relabelled.prom", time="1700000000")
    ok(report, 3, 1)
    # GPU 0 is MIG: no GPU_UTIL, two instances keyed by GPU_I_ID; the graphics engine ratio
    # is its own measure (0.75), never util_pct. GPU 1: util 64 % next to engine 0.5.
    assert samples(db, "gpu17") == [(t(2023, 11, 14, 22, 13, 20), 1, 64.0)]
    assert details(db, "gpu17") == [
        (t(2023, 11, 14, 22, 13, 20), 0, 1, None, 20480.0, None, None, None, None, 0.75, None),
        (t(2023, 11, 14, 22, 13, 20), 0, 2, None, None, None, None, None, None, 0.0, None),
        # dcgm_gpu_temp, dcgm_power_usage: the old exporter's names
        (t(2023, 11, 14, 22, 13, 20), 1, None, None, None, None, 180.5, 57.0, None, 0.5, None),
    ]
    assert rejects(db, "dcgm-relabelled.prom") == [(10, "graphics engine activity outside 0-1: 1.5")]


def test_prometheus_label_parser() -> None:
    name, labels, value, stamp = parse_sample(
        'DCGM_FI_DEV_GPU_UTIL{modelName="A100, \\"80GB\\" x=1",gpu="0"} 37 1700000000123'
    )
    assert (name, labels, value, stamp) == (
        "DCGM_FI_DEV_GPU_UTIL",
        {"modelName": 'A100, "80GB" x=1', "gpu": "0"},
        "37",
        "1700000000123",
    )
    assert parse_sample('m{a="}"} 1') == ("m", {"a": "}"}, "1", None)
    for broken in ('m{a="x" 1', "m{a=x} 1", 'm{a="x"}', 'm{a="x"} 1 2 3'):
        with pytest.raises(ValueError):
            parse_sample(broken)


def test_sample_timestamps_win_over_time_comments(tmp_path: Path) -> None:
    scrape = tmp_path / "node11.prom"
    scrape.write_text(
        '# time: 2026-07-14T06:00:00Z\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 5 1700000000000\nDCGM_FI_DEV_GPU_UTIL{gpu="1"} 6\n'
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, scrape)[0], 2, 0)
    assert samples(db, "node11") == [(t(2023, 11, 14, 22, 13, 20), 0, 5.0), (t(2026, 7, 14, 6), 1, 6.0)]


def test_time_from_file_name_and_time_option() -> None:
    assert time_from_name(Path("node01-1700000000.prom"), "UTC") == t(2023, 11, 14, 22, 13, 20)
    assert time_from_name(Path("node01_20260714T081200Z.prom"), "Europe/Zurich") == t(2026, 7, 14, 8, 12)
    assert time_from_name(Path("node01_20260714T081200.prom"), "Europe/Zurich") == t(2026, 7, 14, 6, 12)  # CEST
    assert time_from_name(Path("node01.prom"), "UTC") is None
    assert parse_time_option("2026-07-14 08:12:00", "Europe/Zurich") == t(2026, 7, 14, 6, 12)
    assert parse_time_option("2026-07-14T08:12:00+01:00", "UTC") == t(2026, 7, 14, 7, 12)
    with pytest.raises(InputError, match="--time"):
        parse_time_option("yesterday", "UTC")


# ------------------------------------------------------------------ Prometheus query_range JSON


def test_query_range_several_metrics_and_hosts(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "dcgm_query_range.json")
    ok(report, 4, 1)
    # n1 from Hostname; the other from instance without its port; NaN is no value
    assert samples(db, "n1") == [
        (t(2023, 11, 14, 22, 13, 20), 0, 37.0),
        (t(2023, 11, 14, 22, 13, 35), 0, 38.0),
        (t(2023, 11, 14, 22, 13, 50), 0, None),
    ]
    assert rows(
        db,
        "SELECT sample_at, round(CAST(gr_engine_active AS DOUBLE), 2) FROM gpu_sample_details WHERE "
        "machine_id = 'n1' ORDER BY 1",
    ) == [
        (t(2023, 11, 14, 22, 13, 20), 0.41),
        (t(2023, 11, 14, 22, 13, 35), 0.43),
    ]
    assert samples(db, "10.0.0.2") == [(t(2023, 11, 14, 22, 13, 20, 500000), 3, 100.0)]
    assert rejects(db, "dcgm_query_range.json") == [(None, "GPU utilization outside 0-100: -3")]


def test_query_range_metric_from_file_name_errors_and_host_option(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "DCGM_FI_DEV_GPU_UTIL.json", format_name="dcgm_query_range")
    ok(report, 2, 0)
    assert samples(db, "n7") == [(t(2023, 11, 14, 23, 13, 20), 2, 12.0), (t(2023, 11, 14, 23, 14, 20), 2, 14.0)]
    (failed,) = ingest(db, DATA / "query_error.json", format_name="dcgm_query_range")
    assert failed.status == "failed" and "the query failed: invalid parameter" in failed.message
    (failed,) = ingest(db, DATA / "dcgm_query_range.json", host="n9")
    assert failed.status == "failed" and "would merge" in failed.message
    assert rows(db, "SELECT count(*) FROM gpu_samples WHERE machine_id = 'n9'") == [(0,)]


# ------------------------------------------------------------------ store, CLI and report


def test_replace_takes_back_samples_devices_and_events(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "nvidia-smi-node01.csv", zone="Europe/Zurich")
    (again,) = ingest(db, DATA / "nvidia-smi-node01.csv", zone="Europe/Zurich", replace=True)
    assert (again.status, again.rows, again.rejects) == ("replaced", 4, 4)
    counts = (
        "SELECT (SELECT count(*) FROM gpu_samples), (SELECT count(*) FROM gpu_sample_details), "
        "(SELECT count(*) FROM gpu_devices), (SELECT count(*) FROM gpu_events), (SELECT count(*) FROM rejects)"
    )
    assert rows(db, counts) == [(4, 4, 2, 1, 4)]


def test_cli_host_time_interval_and_one_line_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(
        app,
        [
            "ingest",
            str(DATA / "node04.dmon.log"),
            "--time",
            "2026-03-01 12:00:00",
            "--interval",
            "5",
            "--tz",
            "UTC",
            "--host",
            "gpu-a",
            "--db",
            db,
        ],
    )
    assert result.exit_code == 0, result.output
    assert rows(Path(db), "SELECT DISTINCT machine_id FROM gpu_samples") == [("gpu-a",)]
    bad = runner.invoke(app, ["ingest", str(DATA / "node04.dmon.log"), "--time", "noon", "--db", db])
    assert bad.exit_code == ExitCode.USAGE and "Traceback" not in bad.output and "--time 'noon'" in bad.stderr
    generic = tmp_path / "gpu.log"
    generic.write_text((DATA / "node05-dmon.log").read_text())
    nohost = runner.invoke(app, ["ingest", str(generic), "--db", db])
    assert nohost.exit_code == ExitCode.USAGE and "Traceback" not in nohost.output
    assert [line for line in nohost.stderr.splitlines() if line.startswith("gca: error:")][0].count("--host") == 1


PHILLY_JOB = [
    {
        "status": "Pass",
        "vc": "vc1",
        "jobid": "job_gpu",
        "user": "u1",
        "submitted_time": "2026-07-13 22:50:00",  # America/Los_Angeles, PDT: 05:50 UTC
        "attempts": [
            {
                "start_time": "2026-07-13 23:00:00",
                "end_time": "2026-07-14 00:00:00",  # 06:00-07:00 UTC
                "detail": [{"ip": "node01", "gpus": ["gpu0", "gpu1"]}],
            }
        ],
    }
]


def test_report_over_nvidia_smi_samples(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    job_log = tmp_path / "cluster_job_log"
    job_log.write_text(json.dumps(PHILLY_JOB))
    ok(ingest(db, job_log)[0], 1, 0)
    ok(ingest(db, DATA / "nvidia-smi-node01.csv", zone="Europe/Zurich")[0], 4, 4)
    written = build_report(db, tmp_path / "out")
    with (written.out_dir / "jobs.csv").open(newline="") as f:
        (job,) = list(csv.DictReader(f))
    # GPU 0: 26 % and 100 % inside 06:00-07:00 UTC; GPU 1 has no utilization value (N/A)
    assert job["job_id"] == "job_gpu"
    assert int(job["util_samples"]) == 2
    assert float(job["mean_gpu_util_pct"]) == pytest.approx((26 + 100) / 2)


def test_csv_gzip_bom_and_crlf_read_alike(tmp_path: Path) -> None:
    import gzip

    text = "\ufeff" + (DATA / "nvidia-smi-node01.csv").read_text().replace("\n", "\r\n")
    packed = tmp_path / "node01.csv.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, packed, zone="Europe/Zurich")
    ok(report, 4, 4)
    assert samples(db, "node01")[0] == (t(2026, 7, 14, 6, 12, 38, 696000), 0, 26.0)
    assert [line for line, _ in rejects(db, "node01.csv.gz")] == [8, 9, 10, 11]


def test_dmon_column_sets_follow_the_header(tmp_path: Path) -> None:
    # -s um -o DT: no power or temperature; fb (MB, i.e. MiB) is memory used
    um = tmp_path / "node12.log"
    um.write_text(
        "#Date       Time        gpu    sm   mem   enc   dec    fb\n"
        "#YYYYMMDD   HH:MM:SS    Idx     %     %     %     %    MB\n"
        "20260721 12:00:00     0    55    10     0     0  8000\n"
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, um, zone="UTC")[0], 1, 0)
    assert samples(db, "node12") == [(t(2026, 7, 21, 12), 0, 55.0)]
    assert details(db, "node12") == [(t(2026, 7, 21, 12), 0, None, 10.0, 8000.0, None, None, None, None, None, None)]
    # -o T: times without a date cannot be placed
    times_only = tmp_path / "node13.log"
    times_only.write_text("#Time        gpu    sm\n#HH:MM:SS    Idx     %\n12:00:00      0    55\n")
    (failed,) = ingest(db, times_only)
    assert failed.status == "failed" and "-o T" in failed.message


def test_query_range_without_dcgm_metrics_fails_clearly(tmp_path: Path) -> None:
    other = tmp_path / "node_load.json"
    other.write_text(
        '{"status":"success","data":{"resultType":"matrix","result":'
        '[{"metric":{"__name__":"node_load1","instance":"n1:9100"},"values":[[1700000000,"0.5"]]}]}}'
    )
    (failed,) = ingest(tmp_path / "s.duckdb", other, format_name="dcgm_query_range")
    assert failed.status == "failed" and "no series of a DCGM metric" in failed.message


def test_a_log_holding_only_the_tool_failure_is_read_as_events(tmp_path: Path) -> None:
    failed_node = tmp_path / "node20.csv"
    failed_node.write_text(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n\nNo devices were found\n"
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, failed_node)[0], 0, 0)  # recognized without --format
    assert rows(db, "SELECT machine_id, kind, line FROM gpu_events ORDER BY line") == [
        ("node20", "tool_error", 1),
        ("node20", "tool_error", 3),
    ]
    no_library = tmp_path / "node21.csv"
    no_library.write_text(
        "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA "
        "Display Driver is properly installed and present in your system.\nPlease also try adding directory "
        "that contains libnvidia-ml.so to your system PATH.\n"
    )
    ok(ingest(db, no_library)[0], 0, 0)
    assert rows(db, "SELECT count(*) FROM gpu_events WHERE machine_id = 'node21'") == [(2,)]


# ------------------------------------------------------------------ real outputs (tests/data/gpu/real/SOURCES.md)

REAL = DATA / "real"


def events(db: Path) -> list[tuple]:
    return rows(
        db, "SELECT event_at, machine_id, gpu_index, kind, detail, line FROM gpu_events ORDER BY line, gpu_index"
    )


def test_real_query_gpu_log_without_timestamp_takes_time_and_interval(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    # Europe/Berlin is UTC+1 in November: local 10:00:00 is 09:00:00 UTC; one row every 2 s
    ok(
        ingest(db, REAL / "ksysguard-node01.csv", zone="Europe/Berlin", time="2022-11-18T10:00:00", interval_s=2.0)[0],
        4,
        0,
    )
    assert samples(db, "ksysguard-node01") == [
        (t(2022, 11, 18, 9, 0, 0), 0, 26.0),
        (t(2022, 11, 18, 9, 0, 2), 0, 25.0),
        (t(2022, 11, 18, 9, 0, 4), 0, 24.0),
        (t(2022, 11, 18, 9, 0, 6), 0, 26.0),
    ]
    # `4 %`, `83.92 W`, `56` (temperature has no unit even without nounits), `1320 MHz`
    assert details(db, "ksysguard-node01")[0] == (
        t(2022, 11, 18, 9),
        0,
        None,
        4.0,
        None,
        None,
        83.92,
        56.0,
        1320.0,
        None,
        None,
    )


def test_real_query_gpu_logs_that_cannot_tell_gpus_apart_fail_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (no_index,) = ingest(db, REAL / "bpytop-2gpu.csv", host="ws", time="2020-11-15T12:00:00Z")
    assert no_index.status == "failed"
    assert no_index.message.startswith(
        f"{REAL / 'bpytop-2gpu.csv'}: the field list has no GPU index, uuid or pci.bus_id"
    )
    columns = (
        "memory.total",
        "memory.free",
        "memory.used",
        "temperature.gpu",
        "fan.speed",
        "utilization.gpu",
        "utilization.memory",
    )
    (headerless,) = ingest(
        db,
        REAL / "i3pystatus-noheader.csv",
        format_name="nvsmi_csv",
        columns=columns,
        host="laptop",
        time="2020-04-02T10:00:00Z",
    )
    assert headerless.status == "failed" and "has no GPU index" in headerless.message
    assert rows(db, "SELECT count(*) FROM gpu_samples") == [(0,)]


def test_real_interleaved_log_without_index_and_dmon_with_dates(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    # four A10s queried every few ms, no index: rows of different GPUs cannot be told apart
    (refused,) = ingest(db, REAL / "a10-lms.csv", host="a10", zone="Asia/Shanghai")
    assert refused.status == "failed" and "the field list has no GPU index, uuid or pci.bus_id" in refused.message
    # dmon -o TD: Asia/Shanghai is UTC+8 all year, so 13:54:35 is 05:54:35 UTC; a blank line skipped
    ok(ingest(db, REAL / "a10-mutc-dt.dmon", host="a10", zone="Asia/Shanghai")[0], 6, 0)
    assert samples(db, "a10") == [
        (t(2024, 1, 4, 5, 54, 35 + k), 0, sm) for k, sm in enumerate([6.0, 0.0, 3.0, 13.0, 0.0, 3.0])
    ]
    # fb in MB (= MiB), mem %, pclk MHz; no power or temperature in -s mutc
    assert [(d[3], d[4], d[8]) for d in details(db, "a10")] == [
        (1.0, 239.0, 1695.0),
        (0.0, 74.0, 1695.0),
        (0.0, 7.0, 1695.0),
        (0.0, 478.0, 1695.0),
        (0.0, 67.0, 1695.0),
        (0.0, 7.0, 1695.0),
    ]


def test_real_uuid_only_log_waits_for_a_file_that_gives_the_index(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    p100 = REAL / "netdata-p100.csv"
    # its only row cannot be stored yet: the file fails, saying what to ingest first
    first = ingest(db, p100, host="p100", time="2023-01-01T00:00:00Z")[0]
    assert (
        first.status == "failed"
        and (
            f"{p100}:2: every row was rejected, nothing stored (1 rows); the likely cause, in all:"
            " GPU GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6 has no index in this file: first ingest one that "
            "pairs it with"
            " its index (e.g. nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv)"
        )
        in first.message
    )
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]
    mapping = tmp_path / "p100-index.csv"
    mapping.write_text(
        "timestamp, index, uuid, utilization.gpu [%]\n2023/01/01 00:00:00.000, 3, "
        "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6, 0 %\n"
    )
    ok(ingest(db, mapping, host="p100", zone="UTC")[0], 1, 0)
    again = ingest(db, p100, host="p100", time="2023-01-01T00:00:01Z")[0]
    assert (again.status, again.rows, again.rejects) == ("loaded", 1, 0)
    # nounits values: util 0, mem util 0, used 0 MiB, temp 37, 28.16 W, SM 405 MHz; no memory.total queried
    assert details(db, "p100")[-1] == (t(2023, 1, 1, 0, 0, 1), 3, None, 0.0, 0.0, None, 28.16, 37.0, 405.0, None, None)


def test_real_renamed_reason_fields_and_dmon_without_sm(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    # the query named clocks_throttle_reasons.*, driver 570 printed clocks_event_reasons.*; mask 0x4 = sw_power_cap
    ok(ingest(db, REAL / "gpu-st-ml-1.csv", time="2025-10-01T10:00:00Z")[0], 2, 0)
    assert rows(db, "SELECT gpu_index, throttle_reasons FROM gpu_sample_details ORDER BY 1") == [
        (0, "sw_power_cap"),
        (1, "sw_power_cap"),
    ]
    assert rows(db, "SELECT DISTINCT machine_id, model FROM gpu_devices") == [
        ("gpu-st-ml-1", "NVIDIA RTX PRO 6000 Blackwell Server Edition")
    ]
    # dmon -s pt: pwr and gtemp only, no sm column (no utilization); `-` memory temperature; 1 s apart
    dmon_db = tmp_path / "d.duckdb"
    ok(ingest(dmon_db, REAL / "gpu-st-ml-1.dmon", time="2025-10-01T10:00:00Z", interval_s=1.0)[0], 4, 0)
    assert samples(dmon_db, "gpu-st-ml-1") == [
        (t(2025, 10, 1, 10), 0, None),
        (t(2025, 10, 1, 10), 1, None),
        (t(2025, 10, 1, 10, 0, 1), 0, None),
        (t(2025, 10, 1, 10, 0, 1), 1, None),
    ]
    assert [(d[1], d[6], d[7]) for d in details(dmon_db, "gpu-st-ml-1")] == [
        (0, 30.0, 25.0),
        (1, 28.0, 25.0),
        (0, 30.0, 25.0),
        (1, 27.0, 25.0),
    ]


def test_real_dmon_pastes_and_wrapper_output(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    # pasted as a Markdown quote; `temp` (old name) and `fb` (MB = MiB); ECC `-`
    ok(ingest(db, REAL / "deepspeech-pucvmet.dmon", host="ds", time="2016-11-11T10:00:00Z")[0], 4, 0)
    assert samples(db, "ds") == [
        (t(2016, 11, 11, 10), 0, 25.0),
        (t(2016, 11, 11, 10), 1, 18.0),
        (t(2016, 11, 11, 10), 2, 24.0),
        (t(2016, 11, 11, 10), 3, 18.0),
    ]
    assert details(db, "ds")[3] == (t(2016, 11, 11, 10), 3, None, 6.0, 11660.0, None, 86.0, 70.0, 1784.0, None, None)
    # the line DCGM's sample printed before dmon's header is a reject, not a failure
    ok(ingest(db, REAL / "dcgm-host-engine.dmon", host="gmt", time="2018-09-03T00:00:00Z", interval_s=1.0)[0], 2, 1)
    assert rejects(db, "dcgm-host-engine.dmon") == [
        (1, "not the tool's output: a shell prompt or a note before the first header")
    ]
    assert details(db, "gmt") == [
        (t(2018, 9, 3, 0, 0, 0), 0, None, 1.0, None, None, 43.0, 48.0, 936.0, None, None),
        (t(2018, 9, 3, 0, 0, 1), 0, None, 1.0, None, None, 43.0, 48.0, 936.0, None, None),
    ]
    # a GeForce refusing dmon: recognized, stored as events
    refused = ingest(db, REAL / "geforce-gt640.dmon")[0]
    assert (refused.format, refused.status, refused.rows) == ("nvsmi_dmon", "loaded", 0)
    assert [e[1:] for e in events(db)] == [
        ("geforce-gt640", None, "tool_error", "Not supported on the device(s)", 1),
        ("geforce-gt640", None, "tool_error", "Failed to process command line", 2),
    ]


def test_real_xml_v12_mig_and_v13_power_fields(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    a100 = REAL / "a100-mig-v12.xml"
    # one <gpu> of attached_gpus 4 (nvidia-smi -i): its position is not its index
    first = ingest(db, a100, host="dgx01", zone="UTC")[0]
    ok(first, 0, 3)  # nothing it could store: the file fails, naming the cause
    assert (
        "a100-mig-v12.xml:8: every row was rejected, nothing stored (3 rows); the likely cause, in all:"
        " GPU GPU-513536b6-7d19-9063-b049-1e69664bb298 has no index" in first.message
    )
    mapping = tmp_path / "dgx01.csv"
    mapping.write_text(
        "timestamp, index, uuid, utilization.gpu [%]\n"
        "2023/08/04 11:44:29.000, 1, GPU-513536b6-7d19-9063-b049-1e69664bb298, [N/A]\n"
    )
    ok(ingest(db, mapping, zone="UTC")[0], 1, 0)
    assert ingest(db, a100, host="dgx01", zone="UTC")[0].rows == 3
    at = t(2023, 8, 4, 11, 44, 30)
    # MIG parent: utilization N/A, 50 of 81920 MiB, 67.03 W, 27 C, SM 1275 MHz, no reason active;
    # instances 3 and 4: 12 of 19968 MiB each, nothing else of their own
    assert details(db, "dgx01") == [  # the mapping row measured nothing: no details of its own
        (at, 1, None, None, 50.0, 81920.0, 67.03, 27.0, 1275.0, None, "none"),
        (at, 1, 3, None, 12.0, 19968.0, None, None, None, None, None),
        (at, 1, 4, None, 12.0, 19968.0, None, None, None, None, None),
    ]
    assert samples(db, "dgx01") == [(t(2023, 8, 4, 11, 44, 29), 1, None), (at, 1, None)]
    # v11 on Windows (WDDM): power_readings/power_draw; the only GPU attached, so index 0; gpu_idle active
    ok(ingest(db, REAL / "rtx2080-win-v11.xml", host="win", zone="UTC")[0], 1, 0)
    assert details(db, "win") == [
        (t(2022, 9, 20, 14, 7, 39), 0, None, 7.0, 862.0, 8192.0, 14.5, 29.0, 193.0, None, "gpu_idle")
    ]
    assert samples(db, "win") == [(t(2022, 9, 20, 14, 7, 39), 0, 2.0)]
    # v13: no power_draw, only average_power_draw (3.97) and instant_power_draw (3.99): the instant one
    ok(ingest(db, REAL / "blackwell-v13.xml", host="ws", zone="UTC")[0], 1, 0)
    assert details(db, "ws") == [
        (t(2025, 12, 30, 9, 49, 57), 0, None, 0.0, 65720.0, 97887.0, 3.99, 24.0, 180.0, None, "none")
    ]


def test_real_dcgm_scrapes_of_several_versions(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    at = t(2024, 5, 21, 10)
    # pci_bus_id label and XID err_code/err_msg labels; Xid 0 is no event
    ok(ingest(db, REAL / "debian-3090.prom", time="2024-05-21T10:00:00Z")[0], 1, 0)
    assert rows(db, "SELECT machine_id, gpu_index, pci_bus_id, model FROM gpu_devices") == [
        ("debian", 0, "0000:08:00.0", "NVIDIA GeForce RTX 3090")
    ]
    assert events(db) == []
    # H100 MIG with Kubernetes labels on some series: one row per GPU instance, no parent row
    ok(ingest(db, REAL / "gsrh100-074-mig.prom", time="2024-05-21T10:00:00Z")[0], 3, 0)
    assert [(d[1], d[2], d[9]) for d in details(db, "gsrh100-074")] == [(0, 7, 0.0), (0, 8, 0.0), (0, 9, 0.0)]
    assert samples(db, "gsrh100-074") == []
    # no Hostname label: the host is --host; gpu 0 has only profiling fields (DRAM, PCIe RX):
    # their details, and no utilization sample
    ok(ingest(db, REAL / "gmt-189.prom", host="t4", time="2024-05-21T10:00:00Z")[0], 2, 0)
    assert details(db, "t4") == [
        (at, 0, None, None, None, None, None, None, None, None, None),
        (at, 1, None, None, None, None, 167.36, 56.0, 1380.0, None, None),
    ]
    assert [p[:2] + p[8:10] for p in profile(db, "t4")] == [(0, None, 0.0, 0.0), (1, None, None, None)]
    assert samples(db, "t4") == [(at, 1, None)]  # GPU 1: a sample without utilization, as before
    # the first exporter's names (dcgm_gpu_utilization, lower-case uuid)
    ok(ingest(db, REAL / "prometheus-dcgm-readme.prom", host="old", time="2024-05-21T10:00:00Z")[0], 1, 0)
    assert samples(db, "old") == [(at, 0, 0.0)]
    assert details(db, "old") == [(at, 0, None, None, None, None, 31.74, 34.0, 135.0, None, None)]


def test_real_prometheus_api_answers_without_dcgm_data(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    up, empty, error = (
        ingest(db, REAL / name)[0]  # recognized as Prometheus API answers
        for name in ("prometheus4j-up.json", "gpu-operator-983-empty.json", "prometheus-846-error.json")
    )
    assert up.status == empty.status == error.status == "failed"
    assert (
        "no series of a DCGM metric gca reads" in up.message and "no series of a DCGM metric gca reads" in empty.message
    )
    assert error.message.startswith(
        f"{REAL / 'prometheus-846-error.json'}: the query failed: invalid expression type "
        '"matrix" for range query, must be scalar or vector'
    )


# ------------------------------------------------------------------ broken and hostile files

CSV_HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"


def test_a_cut_last_line_is_a_reject_not_a_shorter_number(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cut = tmp_path / "node30.csv"
    # `5000 MiB` cut to `50`: the field count is right, the number is not
    cut.write_text(CSV_HEADER + "2026/07/14 08:00:00.000, 0, 10 %, 5000 MiB\n2026/07/14 08:00:01.000, 0, 11 %, 50")
    ok(ingest(db, cut, zone="UTC")[0], 1, 1)
    assert rejects(db, "node30.csv") == [(3, "the line has no line end: the log was cut off while being written")]
    scrape = tmp_path / "node31.prom"
    scrape.write_text('# time: 2026-07-14T08:00:00Z\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 87\nDCGM_FI_DEV_GPU_UTIL{gpu="1"} 8')
    ok(ingest(db, scrape)[0], 1, 1)
    assert rejects(db, "node31.prom") == [(3, "the line has no line end: the log was cut off while being written")]
    assert samples(db, "node31") == [(t(2026, 7, 14, 8), 0, 87.0)]
    ended_in_a_comment = tmp_path / "node49.prom"
    ended_in_a_comment.write_text(
        '# time: 2026-07-14T08:00:00Z\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 87\n# time: 2026-07-14T08:0'
    )
    ok(ingest(db, ended_in_a_comment)[0], 1, 0)


def test_utf16_binary_and_damaged_gzip_fail_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    utf16 = tmp_path / "node32.csv"
    utf16.write_bytes((CSV_HEADER + "2026/07/14 08:00:00.000, 0, 10 %, 5 MiB\n").encode("utf-16"))  # BOM first
    binary = tmp_path / "node33.csv"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    damaged = tmp_path / "node34.csv.gz"
    body = CSV_HEADER + "".join(
        f"2026/07/14 08:{i // 60:02d}:{i % 60:02d}.000, 0, {i % 100} %, {i} MiB\n" for i in range(3000)
    )
    packed = gzip.compress(body.encode())
    damaged.write_bytes(packed[: len(packed) * 2 // 3])  # a copy interrupted part way
    reports = [ingest(db, f, format_name="nvsmi_csv", zone="UTC")[0] for f in (utf16, binary, damaged)]
    assert [r.status for r in reports] == ["failed"] * 3
    assert (
        reports[0].message.startswith(f"{utf16}:1: UTF-16 text")
        and "iconv -f UTF-16 -t UTF-8 node32.csv" in reports[0].message
    )
    assert reports[1].message.startswith(f"{binary}:1: binary data, not the text nvidia-smi or dcgm-exporter prints")
    assert (
        reports[2].message.startswith(f"{damaged}:")
        and "the compressed file is damaged or cut short" in reports[2].message
    )
    assert rows(db, "SELECT count(*) FROM gpu_samples") == [(0,)]
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]


def test_empty_and_header_only_files(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    empty = tmp_path / "node35.csv"
    empty.write_text("")
    with pytest.raises(InputError, match=": empty"):
        ingest(db, empty)
    (forced,) = ingest(db, empty, format_name="nvsmi_csv")
    assert forced.status == "failed" and "no nvidia-smi --query-gpu header and no data" in forced.message
    header_only = tmp_path / "node36.csv"
    header_only.write_text(CSV_HEADER)  # nvidia-smi stopped before its first sample: nothing to store, nothing wrong
    ok(ingest(db, header_only, zone="UTC")[0], 0, 0)
    empty_dmon = tmp_path / "node37.dmon"
    empty_dmon.write_text("# gpu   pwr  gtemp\n# Idx     W      C\n")
    ok(ingest(db, empty_dmon, time="2026-07-14T08:00:00Z")[0], 0, 0)


def test_times_in_the_skipped_hour_and_times_not_as_nvidia_smi_prints_them(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    log = tmp_path / "node38.csv"
    log.write_text(
        CSV_HEADER
        + "2026/03/08 01:59:59.000, 0, 10 %, 5 MiB\n"  # EST (UTC-5): 06:59:59 UTC
        + "2026/03/08 02:30:00.000, 0, 20 %, 5 MiB\n"  # 02:00-03:00 does not exist in New York that day
        + "2026/03/08 03:00:01, 0, 30 %, 5 MiB\n"  # EDT (UTC-4), no milliseconds: 07:00:01 UTC
        + "2026/03/08 03:00:02 PM, 0, 40 %, 5 MiB\n"  # no 12-hour clock in nvidia-smi: not read as 03:00
        + "2026/03/08 03:00:03+02:00, 0, 50 %, 5 MiB\n"
    )  # nor an offset it would drop
    ok(ingest(db, log, zone="America/New_York")[0], 2, 3)
    assert samples(db, "node38") == [(t(2026, 3, 8, 6, 59, 59), 0, 10.0), (t(2026, 3, 8, 7, 0, 1), 0, 30.0)]
    assert rejects(db, "node38.csv") == [
        (
            3,
            "time 2026/03/08 02:30:00.000 does not exist in America/New_York (clocks skip it when they go forward): "
            "is --tz the zone the log was written in?",
        ),
        (5, "unreadable time 2026/03/08 03:00:02 PM"),
        (6, "unreadable time 2026/03/08 03:00:03+02:00"),
    ]


def test_duplicate_series_in_a_scrape(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    scrape = tmp_path / "node39.prom"
    labels = 'gpu="0",UUID="GPU-a",Hostname="node39"'
    scrape.write_text(
        "# time: 2026-07-14T08:00:00Z\n"
        # one GPU shared by two pods (time-slicing): the same value twice is one value
        f'DCGM_FI_DEV_GPU_UTIL{{{labels},pod="a"}} 40\nDCGM_FI_DEV_GPU_UTIL{{{labels},pod="b"}} 40\n'
        "# time: 2026-07-14T08:00:30Z\n"
        # the same series with two values at one time: which one is right cannot be told
        f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 42\nDCGM_FI_DEV_GPU_UTIL{{{labels}}} 43\n"
        # two GPUs claiming index 1 on one host
        'DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",Hostname="node39"} '
        '50\nDCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-c",Hostname="node39"} 50\n'
    )
    ok(ingest(db, scrape)[0], 1, 2)
    assert samples(db, "node39") == [(t(2026, 7, 14, 8), 0, 40.0)]
    assert rejects(db, "node39.prom") == [
        (5, "several values at one time (duplicate series?) for util: 42 and 43"),
        (7, "several values at one time (duplicate series?) for UUID: GPU-b and GPU-c"),
    ]


def test_query_range_points_of_the_wrong_shape(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    export = tmp_path / "DCGM_FI_DEV_GPU_UTIL.json"
    export.write_text(
        json.dumps(
            {
                "status": "success",
                "warnings": ["partial data"],
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {
                            "metric": {"Hostname": "n1", "gpu": "0"},
                            "values": [
                                [1700000000, "5"],
                                [1700000015],
                                [1700000030, "7", "8"],
                                [1700000045, "NaN"],
                                [1700000060, "+Inf"],
                            ],
                        }
                    ],
                },
            }
        )
    )
    ok(ingest(db, export)[0], 2, 3)
    # 1700000000 is 2023-11-14 22:13:20 UTC; NaN is a missing value, +Inf no value at all
    assert samples(db, "n1") == [(t(2023, 11, 14, 22, 13, 20), 0, 5.0), (t(2023, 11, 14, 22, 14, 5), 0, None)]
    assert [r[1] for r in rejects(db, "DCGM_FI_DEV_GPU_UTIL.json")] == [
        'a point is [time, "value"], not [1700000015]',
        'a point is [time, "value"], not [1700000030,"7","8"]',
        "unreadable GPU utilization +Inf",
    ]
    scalar = tmp_path / "scalar.json"
    scalar.write_text('{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}')
    (failed,) = ingest(db, scalar, format_name="dcgm_query_range")
    assert failed.status == "failed" and failed.message.startswith(f"{scalar}: resultType 'scalar'")


def test_a_lost_gpu_is_one_event_and_no_numbers(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    lost = tmp_path / "node40.csv"
    # written after a log described in a public repository: values turn to [GPU is lost] mid-run
    lost.write_text(
        "timestamp, index, temperature.gpu, power.draw [W], utilization.gpu [%], clocks_throttle_reasons.active\n"
        "2026/09/14 01:09:14.211, 0, 65, 298.71 W, 100 %, 0x0000000000000004\n"
        "2026/09/14 01:09:14.213, 1, 40, 60.00 W, 0 %, 0x0000000000000001\n"
        "2026/09/14 01:09:15.219, 0, [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]\n"
        "2026/09/14 01:09:15.221, 1, 40, 60.00 W, 0 %, 0x0000000000000001\n"
        "2026/09/14 01:09:16.226, 0, [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]\n"
    )
    ok(ingest(db, lost, zone="UTC")[0], 5, 0)
    assert [s for s in samples(db, "node40") if s[1] == 0] == [
        (t(2026, 9, 14, 1, 9, 14, 211000), 0, 100.0),
        (t(2026, 9, 14, 1, 9, 15, 219000), 0, None),
        (t(2026, 9, 14, 1, 9, 16, 226000), 0, None),
    ]
    assert events(db) == [
        (
            t(2026, 9, 14, 1, 9, 15, 219000),
            "node40",
            0,
            "gpu_lost",
            "[GPU is lost] in 2 samples from 2026-09-14 01:09:15 to 2026-09-14 01:09:16",
            4,
        )
    ]


def test_crlf_dmon_and_scrape(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    dmon = tmp_path / "node41.dmon"
    dmon.write_bytes(b"# gpu   pwr  gtemp    sm\r\n# Idx     W      C     %\r\n    0    70     40    55\r\n")
    ok(ingest(db, dmon, time="2026-07-14T08:00:00Z")[0], 1, 0)
    scrape = tmp_path / "node42.prom"
    scrape.write_bytes(b'# time: 2026-07-14T08:00:00Z\r\nDCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="node42"} 55\r\n')
    ok(ingest(db, scrape)[0], 1, 0)
    assert samples(db, "node41") == samples(db, "node42") == [(t(2026, 7, 14, 8), 0, 55.0)]


def test_memory_is_bounded_while_a_file_loads_and_the_limit_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpucluster_analysis.ingest.gpu import nvsmi

    log = tmp_path / "node43.csv"
    log.write_text(CSV_HEADER + "2026/07/14 08:00:00.000, 0, 10 %, 5 MiB\n")
    seen: list[str] = []
    store = nvsmi.store_staged

    def watching(ctx, zone, **kw):
        seen.append(ctx.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
        return store(ctx, zone, **kw)

    monkeypatch.setattr(nvsmi, "store_staged", watching)
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        before = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        ok(ingest_paths(con, [log], IngestOptions(zone="UTC"))[0], 1, 0)
        assert seen == ["488.2 MiB"]  # 512 MB = 512e6 B = 488.28 MiB
        assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == before

        def failing(ctx, zone, **kw):
            ctx.con.execute("SELECT error('boom')")  # aborts the file's transaction

        monkeypatch.setattr(nvsmi, "store_staged", failing)
        (failed,) = ingest_paths(con, [tmp_path / "node43.csv"], IngestOptions(zone="UTC", replace=True))
        assert failed.status == "failed" and "boom" in failed.message
        assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == before


def test_the_repeated_hour_is_read_in_the_order_the_log_went_through_it(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    log = tmp_path / "node44.csv"
    # Europe/Zurich, 2026-10-25: at 03:00 CEST (UTC+2) clocks go back to 02:00 CET (UTC+1)
    log.write_text(
        CSV_HEADER
        + "2026/10/25 01:59:59.000, 0, 1 %, 5 MiB\n"  # CEST: 23:59:59 UTC the day before
        + "2026/10/25 02:30:00.000, 0, 2 %, 5 MiB\n"  # first pass, CEST: 00:30 UTC
        + "2026/10/25 02:59:59.000, 0, 3 %, 5 MiB\n"  # first pass: 00:59:59 UTC
        + "2026/10/25 02:00:00.500, 0, 4 %, 5 MiB\n"  # the clock went back: second pass, CET: 01:00:00.5 UTC
        + "2026/10/25 02:59:00.000, 0, 5 %, 5 MiB\n"  # still the second pass: 01:59 UTC
        + "2026/10/25 03:00:01.000, 0, 6 %, 5 MiB\n"
    )  # CET: 02:00:01 UTC
    ok(ingest(db, log, zone="Europe/Zurich")[0], 6, 0)
    assert [(s[0], s[2]) for s in samples(db, "node44")] == [
        (t(2026, 10, 24, 23, 59, 59), 1.0),
        (t(2026, 10, 25, 0, 30), 2.0),
        (t(2026, 10, 25, 0, 59, 59), 3.0),
        (t(2026, 10, 25, 1, 0, 0, 500000), 4.0),
        (t(2026, 10, 25, 1, 59), 5.0),
        (t(2026, 10, 25, 2, 0, 1), 6.0),
    ]


def test_nvidia_smi_q_text_is_refused_with_the_xml_command(tmp_path: Path) -> None:
    text = tmp_path / "node45.txt"
    text.write_text(
        "\n==============NVSMI LOG==============\n\nTimestamp                           : Tue Aug 15 16:00:35 2017\n"
        "Driver Version                      : 375.66\n\nAttached GPUs                       : 1\nGPU 0000:01:00.0\n"
        "    Utilization\n        Gpu                         : 47 %\n"
    )
    (failed,) = ingest(tmp_path / "s.duckdb", text)
    assert (failed.format, failed.status) == ("nvsmi_xml", "failed")
    assert failed.message.startswith(
        f"{text}: nvidia-smi -q text: gca reads the same report as XML (log it with nvidia-smi -q -x"
    )


def test_sample_stamps_in_seconds_and_the_kubernetes_node_label(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    scrape = tmp_path / "node46.prom"
    # Prometheus stamps are epoch ms; 1700000000 read as ms would be 1970-01-20: rejected
    scrape.write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5 1700000000000\nDCGM_FI_DEV_GPU_UTIL{gpu="1"} 6 1700000000\n')
    ok(ingest(db, scrape)[0], 1, 1)
    assert rejects(db, "node46.prom") == [(2, "sample timestamp 1700000000 is not in epoch milliseconds")]
    export = tmp_path / "util.json"
    # Hostname is the exporter's pod; kubernetes_node (added by Prometheus' discovery) the machine
    export.write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "vector",
                    "result": [
                        {
                            "metric": {
                                "__name__": "DCGM_FI_DEV_GPU_UTIL",
                                "gpu": "0",
                                "Hostname": "nvidia-dcgm-exporter-7xk2p",
                                "kubernetes_node": "gpu-node-3",
                                "instance": "10.1.2.3:9400",
                            },
                            "value": [1700000000, "80"],
                        }
                    ],
                },
            }
        )
    )
    ok(ingest(db, export)[0], 1, 0)
    assert samples(db, "gpu-node-3") == [(t(2023, 11, 14, 22, 13, 20), 0, 80.0)]


def test_units_tell_a_wrong_columns_order_from_the_right_one(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    log = tmp_path / "node47.csv"
    # nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader
    log.write_text("2026/07/14 08:00:00.000, 0, 26 %, 81559 MiB\n2026/07/14 08:00:01.000, 0, 27 %, 1_000 MiB\n")
    swapped = ingest(
        db, log, format_name="nvsmi_csv", zone="UTC", columns=("timestamp", "index", "memory.used", "utilization.gpu")
    )[0]
    # utilization cannot be `81559 MiB` (nor memory `26 %`): both rows rejected, so the file
    # fails, nothing stored under the wrong name
    assert swapped.status == "failed"
    assert (
        "node47.csv:1: every row was rejected, nothing stored (2 rows); the likely cause, in all:"
        " unreadable GPU utilization 81559 MiB" in swapped.message
    )
    right = ingest(
        db, log, format_name="nvsmi_csv", zone="UTC", columns=("timestamp", "index", "utilization.gpu", "memory.used")
    )[0]
    assert (right.status, right.rows, right.rejects) == ("loaded", 1, 1)
    assert rejects(db, "node47.csv") == [(2, "unreadable memory used 1_000 MiB")]


def test_promtool_tsdb_dump_lines(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    dump = tmp_path / "dump.txt"
    # promtool tsdb dump: the name as a label, epoch ms; 1700000000000 ms = 2023-11-14 22:13:20 UTC
    dump.write_text(
        '{__name__="DCGM_FI_DEV_GPU_UTIL", Hostname="n7", gpu="0", instance="10.0.0.7:9400"} 87 1700000000000\n'
        '{__name__="DCGM_FI_DEV_GPU_UTIL", Hostname="n7", gpu="0", instance="10.0.0.7:9400"} 90 1700000015000\n'
        '{__name__="up", instance="10.0.0.7:9400", job="dcgm"} 1 1700000000000\n'
    )
    report = ingest(db, dump)[0]
    assert (report.format, report.status, report.rows, report.rejects) == ("dcgm_prom", "loaded", 2, 0)
    assert samples(db, "n7") == [(t(2023, 11, 14, 22, 13, 20), 0, 87.0), (t(2023, 11, 14, 22, 13, 35), 0, 90.0)]
    assert parse_sample('{__name__="DCGM_FI_DEV_FB_USED", gpu="1"} 512 1700000000000') == (
        "DCGM_FI_DEV_FB_USED",
        {"gpu": "1"},
        "512",
        "1700000000000",
    )


def test_other_exporters_lines_in_a_scrape_are_not_dcgm_samples(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    scrape = tmp_path / "node48.prom"
    # node_exporter's textfile collector serving DCGM next to its own metrics, histogram and
    # summary included, OpenMetrics' `# EOF` at the end
    scrape.write_text(
        "# time: 2026-07-14T08:00:00Z\n"
        "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n# TYPE node_cpu_seconds_total counter\n"
        'node_cpu_seconds_total{cpu="0",mode="idle"} 1.23456789e+06\n'
        "# TYPE http_request_duration_seconds histogram\n"
        'http_request_duration_seconds_bucket{le="0.05"} '
        '24054\nhttp_request_duration_seconds_bucket{le="+Inf"} 144320\n'
        "http_request_duration_seconds_sum 53423\nhttp_request_duration_seconds_count 144320\n"
        'go_gc_duration_seconds{quantile="0.5"} 4.5e-05\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="node48"} 42\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="node48"} 61\n'
        'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu="0",UUID="GPU-a",Hostname="node48"} 12345\n'
        "# EOF\n"
    )
    ok(ingest(db, scrape)[0], 1, 0)
    assert samples(db, "node48") == [(t(2026, 7, 14, 8), 0, 42.0)]
    assert details(db, "node48") == [(t(2026, 7, 14, 8), 0, None, None, None, None, None, 61.0, None, None, None)]


def test_query_range_series_of_different_lengths(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    export = tmp_path / "export.json"
    labels = {"Hostname": "n2", "gpu": "0", "UUID": "GPU-n2"}
    # GPU_UTIL has 3 points, POWER_USAGE 2 (the exporter restarted): the third row has no power
    export.write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {
                            "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", **labels},
                            "values": [[1700000000, "10"], [1700000015, "20"], [1700000030, "30"]],
                        },
                        {
                            "metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", **labels},
                            "values": [[1700000000, "100.5"], [1700000015, "200.25"]],
                        },
                    ],
                },
            }
        )
    )
    ok(ingest(db, export)[0], 3, 0)
    assert samples(db, "n2") == [
        (t(2023, 11, 14, 22, 13, 20), 0, 10.0),
        (t(2023, 11, 14, 22, 13, 35), 0, 20.0),
        (t(2023, 11, 14, 22, 13, 50), 0, 30.0),
    ]
    assert [(d[0], d[6]) for d in details(db, "n2")] == [
        (t(2023, 11, 14, 22, 13, 20), 100.5),
        (t(2023, 11, 14, 22, 13, 35), 200.25),
    ]


# ---------------------------------------------------------- full --query-gpu captures, pasted commands (issue #9)


def _query_rows(path: Path) -> list[dict[str, str]]:
    """The data rows of a --query-gpu capture as {field: value}, read with the csv module alone:
    a header is a row whose first cell is `timestamp` or `index` (the captures below), units
    dropped from the names as nvidia-smi prints them (`memory.used [MiB]`)."""
    out, names = [], None
    with path.open(newline="") as f:
        for row in csv.reader(f, skipinitialspace=True):
            if row and row[0] in ("timestamp", "index"):
                names = [name.split(" [")[0].lower() for name in row]
            elif row and names and len(row) == len(names):
                out.append(dict(zip(names, row, strict=True)))
    return out


def _number(text: str, unit: str) -> float | None:
    return None if text.startswith("[") else float(text.removesuffix(unit).strip())


@pytest.mark.parametrize(
    ("name", "driver", "fields"),
    [
        ("h100-590.csv", "590.48.01", 212),  # Linux, H100 SXM, MIG off
        ("h100-mig-590.csv", "590.48.01", 212),  # Linux, H100 in MIG mode: utilization [N/A]
        ("l40s-595.csv", "595.80", 202),  # Linux, L40S
        ("win-rtx2080s-591.csv", "591.86", 210),  # Windows (WDDM), GeForce RTX 2080 SUPER
    ],
)
def test_real_full_query_gpu_captures_ingest(tmp_path: Path, name: str, driver: str, fields: int) -> None:
    path = REAL / name
    header = path.read_text().splitlines()[0]
    # what was refused before: ~200 fields, mixed-case names and fields gca does not know
    assert header.count(",") + 1 == fields
    assert "pci.baseClass" in header or "vgpu_driver_capability.heterogenous_multivGPU" in header
    expected = _query_rows(path)
    assert len(expected) == 2 and {r["driver_version"] for r in expected} == {driver}
    db = tmp_path / "s.duckdb"
    # nvidia-smi's timestamp is local time: read in --tz (UTC here, so it is stored as printed)
    ok(ingest(db, path, zone="UTC")[0], 2, 0)
    host = name.removesuffix(".csv")
    assert samples(db, host) == [
        (datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f"), int(r["index"]), _number(r["utilization.gpu"], "%"))
        for r in expected
    ]
    assert [(d[4], d[6]) for d in details(db, host)] == [
        (_number(r["memory.used"], "MiB"), round(_number(r["power.draw"], "W"), 2)) for r in expected
    ]
    assert rows(db, "SELECT pci_bus_id, model FROM gpu_devices") == [
        (expected[0]["pci.bus_id"].lower()[-12:], expected[0]["name"])
    ]


def test_real_mig_capture_has_no_utilization_and_the_values_it_has(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ok(ingest(db, REAL / "h100-mig-590.csv", zone="UTC")[0], 2, 0)
    # MIG mode: utilization.gpu [N/A] (NULL, never 0); 59 and 11125 MiB of 81559, 71.15 and 433.78 W
    assert [s[2] for s in samples(db, "h100-mig-590")] == [None, None]
    assert [(d[4], d[5], d[6]) for d in details(db, "h100-mig-590")] == [
        (59.0, 81559.0, 71.15),
        (11125.0, 81559.0, 433.78),
    ]


def test_real_2020_log_after_a_prompt_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    # `Singularity> cat util.csv` above the header: a counted reject; Europe/Copenhagen is UTC+1
    # in November, so 13:48:11.412 is 12:48:11.412 UTC; one row every 5 s (-l 5)
    ok(ingest(db, REAL / "aicloud-v100.csv", zone="Europe/Copenhagen")[0], 4, 1)
    assert rejects(db, "aicloud-v100.csv") == [
        (1, "not the tool's output: a shell prompt or a note before the first header")
    ]
    assert samples(db, "aicloud-v100") == [
        (t(2020, 11, 12, 12, 48, 11, 412000), 0, 99.0),
        (t(2020, 11, 12, 12, 48, 16, 415000), 0, 99.0),
        (t(2020, 11, 12, 12, 48, 21, 417000), 0, 99.0),
        (t(2020, 11, 12, 12, 48, 26, 419000), 0, 98.0),
    ]
    assert {(d[4], d[5]) for d in details(db, "aicloud-v100")} == {(30994.0, 32480.0)}


def test_real_command_line_above_its_header_and_a_capture_without_times(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = REAL / "smc57-rtx2060.csv"
    # driver 460: no timestamp queried, so the capture is refused with the one line naming what to pass
    (refused,) = ingest(db, path, zone="UTC")
    assert refused.status == "failed" and refused.message == (
        f"{path}: a --query-gpu log without timestamp has no times (pass --time (when the first sample was taken) "
        "and --interval (seconds between samples))"
    )
    ok(ingest(db, path, zone="UTC", time="2022-04-18T12:00:00Z")[0], 1, 0)
    # the command asked for gpu_name,gpu_bus_id; the header printed name, pci.bus_id: the header wins.
    # No index: GPU 0 by PCI order; 20 %, 682 of 5934 MiB, 36 C
    assert samples(db, "smc57-rtx2060") == [(t(2022, 4, 18, 12), 0, 20.0)]
    assert details(db, "smc57-rtx2060") == [
        (t(2022, 4, 18, 12), 0, None, 8.0, 682.0, 5934.0, None, 36.0, None, None, None)
    ]
    assert rows(db, "SELECT pci_bus_id, model FROM gpu_devices") == [("0000:09:00.0", "GeForce RTX 2060")]


def test_real_noheader_paste_takes_its_fields_from_the_command(tmp_path: Path) -> None:
    path = REAL / "i3pystatus-776-cmd.csv"
    (report,) = ingest(tmp_path / "s.duckdb", path, host="laptop", time="2020-04-02T10:00:00Z")
    # recognized without --format or --columns; the fields are read, and they name no GPU
    assert report.format == "nvsmi_csv" and report.status == "failed"
    assert report.message.startswith(f"{path}: the field list has no GPU index, uuid or pci.bus_id")


@pytest.mark.parametrize(
    "command",
    [
        "$ nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 5",
        "user@gpu01:~$ nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader --loop=5",
        'PS C:\\> nvidia-smi.exe --query-gpu="index,utilization.gpu,memory.used" --format=csv,noheader -l 5',
        "> nvidia-smi -lms 5000 --query-gpu index,utilization.gpu,memory.used --format csv,noheader,nounits "
        "> gpu.csv &",
    ],
)
def test_a_pasted_command_names_the_fields_and_its_loop_the_interval(tmp_path: Path, command: str) -> None:
    log = tmp_path / "node50.csv"
    nounits = "nounits" in command
    rows_ = [(0, 35, 1200), (1, 0, 4), (0, 40, 1300), (1, 0, 4)]
    log.write_text(
        command + "\n" + "".join(f"{i}, {u}, {m}\n" if nounits else f"{i}, {u} %, {m} MiB\n" for i, u, m in rows_)
    )
    db = tmp_path / "s.duckdb"
    # no timestamp: --time gives the first sample; -l 5 / --loop=5 / -lms 5000 the 5 s between samples
    ok(ingest(db, log, time="2026-07-14T08:00:00Z")[0], 4, 0)
    assert samples(db, "node50") == [
        (t(2026, 7, 14, 8), 0, 35.0),
        (t(2026, 7, 14, 8), 1, 0.0),
        (t(2026, 7, 14, 8, 0, 5), 0, 40.0),
        (t(2026, 7, 14, 8, 0, 5), 1, 0.0),
    ]
    assert [d[4] for d in details(db, "node50")] == [1200.0, 4.0, 1300.0, 4.0]


def test_a_pasted_command_then_its_header_and_a_mixed_case_header(tmp_path: Path) -> None:
    log = tmp_path / "node51.csv"
    # the header that follows the command wins; mixed-case names and unknown fields are skipped
    log.write_text(
        "[root@node51 ~]# nvidia-smi --query-gpu=timestamp,pci.baseClass,index,encoder.stats.sessionCount,"
        "utilization.gpu --format=csv\n"
        "timestamp, pci.baseClass, index, encoder.stats.sessionCount, utilization.gpu [%]\n"
        "2026/07/14 08:00:00.000, 0x3, 0, 0, 12 %\n"
        "TIMESTAMP, INDEX, UTILIZATION.GPU [%]\n"  # any case
        "2026/07/14 08:00:10.000, 0, 13 %\n"
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, log, zone="UTC")[0], 2, 0)
    assert samples(db, "node51") == [(t(2026, 7, 14, 8), 0, 12.0), (t(2026, 7, 14, 8, 0, 10), 0, 13.0)]


@pytest.mark.parametrize(
    "name",
    keep_by_default(
        [
            "nvidia-smi-node01.csv",
            "node05-dmon.log",
            "node04.dmon.log",
            "real/a10-mutc-dt.dmon",
            "real/deepspeech-pucvmet.dmon",
            "real/h100-590.csv",
            "real/aicloud-v100.csv",
        ],
        {"nvidia-smi-node01.csv"},
    ),
)
def test_lines_read_in_small_chunks_store_what_whole_reads_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from gpucluster_analysis.ingest import lines as tool_lines

    source = DATA / name
    cut = tmp_path / source.name
    cut.write_bytes(source.read_bytes().rstrip(b"\n"))  # and a last line without its line end
    options = {"zone": "UTC", "time": "2026-07-14T08:00:00Z", "interval_s": 1.0, "host": "n"}

    def stored(db: Path) -> tuple:
        return (
            rows(db, "SELECT * EXCLUDE (file_id) FROM gpu_samples ORDER BY ALL"),
            rows(db, "SELECT * EXCLUDE (file_id) FROM gpu_sample_details ORDER BY ALL"),
            rows(db, "SELECT line, reason, text FROM rejects ORDER BY ALL"),
            rows(db, "SELECT * EXCLUDE (file_id) FROM gpu_events ORDER BY ALL"),
        )

    whole = [ingest(tmp_path / "a.duckdb", f, **options)[0] for f in (source, cut)]
    monkeypatch.setattr(tool_lines, "CHUNK_BYTES", 37)  # chunk ends inside lines, several chunks per line
    chunked = [ingest(tmp_path / "b.duckdb", f, **options)[0] for f in (source, cut)]
    assert [(r.status, r.rows, r.rejects) for r in chunked] == [(r.status, r.rows, r.rejects) for r in whole]
    assert stored(tmp_path / "b.duckdb") == stored(tmp_path / "a.duckdb")
    assert whole[0].rows > 0


# ------------------------------------------------------------------ DCGM profiling fields


def test_real_scrape_with_profiling_fields_and_a_pod(tmp_path: Path) -> None:
    # dcgm-exporter 4.x (driver 580) under the GPU operator: GPU_UTIL 0 while a kernel is
    # launched now and then (graphics engine 0.47 %), the pod the GPU serves on every series
    db = tmp_path / "s.duckdb"
    at = t(2025, 11, 4, 12)
    ok(ingest(db, REAL / "rtx4000ada-k8s-580.prom", time="2025-11-04T12:00:00Z")[0], 1, 0)
    host = "lke529760-766837-0a634ab30000"
    assert samples(db, host) == [(at, 0, 0.0)]
    # FB total = used 1 + free 20015 + reserved 457
    assert details(db, host) == [(at, 0, None, None, 1.0, 20473.0, None, None, None, 0.0, None)]
    assert profile(db, host) == [
        (0, None, None, None, 0.0, None, None, None, 0.003074, 45987793.0, 78398480.0, None, None)
    ]
    assert rows(db, "SELECT round(CAST(gr_engine_active AS DOUBLE), 6) FROM gpu_sample_details") == [(0.004656,)]
    assert workloads(db) == [(host, 0, None, at, at, "cuda-75454ffb9f-8ljq7", "default", "cuda", None)]


PROFILING_ONLY = """\
# time: 2026-07-14T06:00:00Z
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.412
DCGM_FI_PROF_SM_OCCUPANCY{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.25
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.2
DCGM_FI_PROF_PIPE_FP64_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0
DCGM_FI_PROF_PIPE_FP32_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.05
DCGM_FI_PROF_PIPE_FP16_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.125
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.5
DCGM_FI_PROF_NVLINK_TX_BYTES{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 123456789
DCGM_FI_PROF_NVLINK_RX_BYTES{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 1e9
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-b",Hostname="n1",pod="dcgm-exporter-x7",namespace="gpu-operator"} NaN
DCGM_FI_PROF_SM_ACTIVE{gpu="2",UUID="GPU-c",GPU_I_ID="3",Hostname="n1",hpc_job="4242"} 0.75
DCGM_FI_PROF_SM_ACTIVE{gpu="2",UUID="GPU-c",GPU_I_ID="5",Hostname="n1",hpc_job="4243"} 1.2
DCGM_FI_PROF_PCIE_TX_BYTES{gpu="3",UUID="GPU-d",Hostname="n1"} -5
# time: 2026-07-14T06:00:30Z
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a",Hostname="n1",exported_pod="train-0",exported_namespace="ml",pod="dcgm-exporter-x7"} 0.5
DCGM_FI_PROF_SM_ACTIVE{gpu="2",UUID="GPU-c",GPU_I_ID="3",Hostname="n1",hpc_job="4242"} 0.7
"""  # noqa: E501  -- a dcgm-exporter scrape as served: its label sets unbroken


def test_profiling_only_scrape_stores_every_field_and_the_workloads(tmp_path: Path) -> None:
    scrape = tmp_path / "n1.prom"
    scrape.write_text(PROFILING_ONLY)
    db = tmp_path / "s.duckdb"
    # 4 stored rows: GPU 0 twice, MIG instance 3 twice; GPU 1 (NaN) has no value to store
    ok(ingest(db, scrape)[0], 5, 2)
    assert rejects(db, "n1.prom") == [(13, "SM activity outside 0-1: 1.2"), (14, "negative PCIe or NVLink traffic")]
    assert samples(db, "n1") == []  # profiling only: no utilization samples
    assert profile(db, "n1") == [
        (0, None, 0.412, 0.25, 0.2, 0.0, 0.05, 0.125, 0.5, None, None, 123456789.0, 1e9),
        (2, 3, 0.75, None, None, None, None, None, None, None, None, None, None),
        (0, None, 0.5, None, None, None, None, None, None, None, None, None, None),
        (2, 3, 0.7, None, None, None, None, None, None, None, None, None, None),
    ]
    first, last = t(2026, 7, 14, 6), t(2026, 7, 14, 6, 0, 30)
    # the workload pod, never the exporter's own (exported_pod wins; GPU 1 names no workload)
    assert workloads(db) == [
        ("n1", 0, None, first, last, "train-0", "ml", None, None),
        ("n1", 2, 3, first, last, None, None, None, "4242"),
        ("n1", 2, 5, first, first, None, None, None, "4243"),
    ]
    # --replace takes the file's workloads back with its samples (they were kept twice)
    (again,) = ingest(db, scrape, replace=True)
    assert again.status == "replaced" and len(workloads(db)) == 3


def test_query_range_export_of_profiling_fields(tmp_path: Path) -> None:
    export = tmp_path / "prof.json"
    export.write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {
                            "metric": {
                                "__name__": "DCGM_FI_PROF_SM_ACTIVE",
                                "gpu": "0",
                                "Hostname": "n2",
                                "pod": "job-a",
                                "namespace": "x",
                            },
                            "values": [[1700000000, "0.25"], [1700000060, "0.75"]],
                        },
                        {
                            "metric": {
                                "__name__": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                "gpu": "0",
                                "Hostname": "n2",
                                "pod": "job-a",
                                "namespace": "x",
                            },
                            "values": [[1700000000, "0.125"], [1700000060, "NaN"]],
                        },
                    ],
                },
            }
        )
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, export)[0], 2, 0)
    assert [p[:5] for p in profile(db, "n2")] == [(0, None, 0.25, None, 0.125), (0, None, 0.75, None, None)]
    assert samples(db, "n2") == []
    assert workloads(db) == [
        ("n2", 0, None, t(2023, 11, 14, 22, 13, 20), t(2023, 11, 14, 22, 14, 20), "job-a", "x", None, None)
    ]


# ------------------------------------------------------------------ sanity bounds (issue #26)


def test_samples_in_2999_or_of_a_gpu_past_the_bound_leave_the_headline_to_the_sane_ones(tmp_path: Path) -> None:
    """Issue #26, item 4: one telemetry row of GPU index 5000 made its machine hold 5,001 GPUs in
    the report, and a sample in 2999 stretched the sampled period. Reproduction:

        printf 'timestamp, index, utilization.gpu [%%]\\n2017/10/01 01:30:00.000, 5000, 100 %%\\n' > m1.csv
        gca ingest cluster_job_log m1.csv --tz America/Los_Angeles --db s.duckdb
        gca report --db s.duckdb --out r --json

    Now such a row is rejected with its reason, and the machines' GPUs and the job's mean
    utilization are those of the sane samples, worked out here.
    """
    db = tmp_path / "s.duckdb"
    job_log = write(
        tmp_path / "cluster_job_log",
        json.dumps(
            [
                {
                    "jobid": "j1",
                    "status": "Pass",
                    "vc": "vc1",
                    "user": "u1",
                    "submitted_time": "2017-10-01 00:00:00",
                    "attempts": [
                        {
                            "start_time": "2017-10-01 01:00:00",
                            "end_time": "2017-10-01 03:00:00",
                            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}],
                        }
                    ],
                }
            ]
        ),
    )
    sane = [("2017/10/01 01:30:00.000", 0, 40), ("2017/10/01 01:30:00.000", 1, 60), ("2017/10/01 02:00:00.000", 0, 80)]
    absurd = [
        ("2017/10/01 01:30:00.000", 5000, 100),
        ("2999/10/01 01:30:00.000", 0, 100),
        ("2017/10/01 01:31:00.000", -1, 100),
    ]
    log = write(
        tmp_path / "m1.csv",
        "timestamp, index, utilization.gpu [%]\n"
        + "".join(f"{at}, {gpu}, {util} %\n" for at, gpu, util in [sane[0], *absurd, *sane[1:]]),
    )
    ok(ingest(db, job_log, zone="America/Los_Angeles")[0], 1, 0)
    ok(ingest(db, log, zone="America/Los_Angeles")[0], len(sane), len(absurd))
    assert rejects(db, "m1.csv") == [
        (3, "GPU index 5000: over the bound of 1,024 GPUs per node (--max-gpus-per-node)"),
        (4, "time 2999/10/01 01:30:00.000 is outside the years gca reads (1990-2059)"),
        (5, "unreadable GPU index -1"),
    ]
    h = build_report(db, tmp_path / "r").summary
    # the job's two GPUs; its samples all fall inside its attempt (01:00-03:00)
    assert (h["overview"]["machines"], h["overview"]["gpus"]) == (1, 1 + max(gpu for _, gpu, _ in sane))
    assert h["utilization"]["samples"] == len(sane)
    assert h["utilization"]["mean_gpu_util_pct"] == pytest.approx(sum(u for _, _, u in sane) / len(sane))


def test_philly_util_samples_outside_the_years_and_gpu_columns_past_the_bound(tmp_path: Path) -> None:
    """Issue #26: a Philly utilization sample in 2999 is a reject; a cluster_gpu_util header with a
    GPU column past the bound of GPUs per node refuses the file (every row has that column)."""
    db = tmp_path / "s.duckdb"
    gpu = write(
        tmp_path / "cluster_gpu_util",
        "time,machineId,gpu0_util,gpu1_util\n2017-10-03 00:06:00 PDT,m1,10,20,\n2999-10-03 00:06:00 PDT,m1,30,40,\n",
    )
    cpu = write(
        tmp_path / "cluster_cpu_util",
        "time,machine_id,cpu_util\n2017-10-03 00:06:00 PDT,m1,5\n1989-12-31 15:00:00 PST,m1,6\n",
    )
    mem = write(
        tmp_path / "cluster_mem_util",
        "time,machine_id,mem_total,mem_free\n2017-10-03 00:06:00 PDT,m1,100,50\n2060-01-01 00:06:00 PDT,m1,100,50\n",
    )
    reports = ingest(db, gpu, cpu, mem)
    assert [(r.rows, r.rejects) for r in reports] == [(2, 1), (1, 1), (1, 1)]
    outside = " is outside the years gca reads (1990-2059)"
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY file_id") == [
        (3, "time 2999-10-03 00:06:00 PDT" + outside),
        (3, "time 1989-12-31 15:00:00 PST" + outside),
        (3, "time 2060-01-01 00:06:00 PDT" + outside),
    ]
    assert rows(
        db, "SELECT DISTINCT year(sample_at) FROM gpu_samples UNION SELECT year(sample_at) FROM host_samples"
    ) == [(2017,)]
    wide = write(
        tmp_path / "wide" / "cluster_gpu_util",
        "time,machineId,gpu0_util,gpu5000_util\n2017-10-03 00:06:00 PDT,m1,10,20,\n",
    )
    (report,) = ingest(tmp_path / "w.duckdb", wide)
    assert report.status == "failed"
    assert report.message.startswith(
        f"{wide}:1: its column gpu5000: over the bound of 1,024 GPUs per node (--max-gpus-per-node)"
    )
    (report,) = ingest(tmp_path / "w2.duckdb", wide, max_gpus_per_node=8192)
    assert (report.status, report.rows) == ("loaded", 2)


def test_dmon_and_xml_rows_past_the_bound_are_rejected(tmp_path: Path) -> None:
    """The exact way of every other nvidia-smi form holds them to the same bounds (nvsmi_check.sql)."""
    db = tmp_path / "s.duckdb"
    dmon = write(
        tmp_path / "node07.dmon.log",
        "#Date Time gpu sm\n#YYYYMMDD HH:MM:SS Idx %\n"
        "20260714 08:00:00 0 10\n20260714 08:00:00 2000 10\n29990714 08:00:00 1 10\n",
    )
    ok(ingest(db, dmon, zone="UTC")[0], 1, 2)
    assert rejects(db, "node07.dmon.log") == [
        (4, "GPU index 2000: over the bound of 1,024 GPUs per node (--max-gpus-per-node)"),
        (5, "time 29990714 08:00:00 is outside the years gca reads (1990-2059)"),
    ]


def test_a_quoted_empty_line_at_the_top_is_no_dmon_data_and_no_crash() -> None:
    """A kernel log pasted from a Markdown quote: its empty quoted line (`>`) is empty once
    unquoted, and the dmon sniffer read its first character (IndexError, a traceback)."""
    from gpucluster_analysis.ingest.gpu.nvsmi_layout import sniff_dmon

    head = (
        "[6781741.548768] NVRM: GPU at PCI:0000:91:00: GPU-b6c3\n>\n[6781741.548776] NVRM: GPU Board Serial Number: 1\n"
    )
    assert sniff_dmon(head) is False
