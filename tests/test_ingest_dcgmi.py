"""`dcgmi dmon -e ...` text (format dcgmi_dmon): real captures (tests/data/gpu/real/SOURCES.md)
and outputs laid out exactly as DCGM's dcgmi/DeviceMonitor.cpp prints them.

Ratios are stored as REAL, so they are compared rounded to 6 places. Times: the run's first
sample is --time, sample k is k intervals later (--interval, else the pasted command's -d).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode
from gpucluster_analysis.ingest.gpu.dcgmi import _sniff, command_delay_s
from gpucluster_analysis.ingest.gpu.telemetry import CUT_LINE, host_from_name
from gpucluster_analysis.ingest.registry import detect_format
from tests.marks import keep_by_default
from tests.store_helpers import assert_loaded, ingest, rows

DATA = Path(__file__).parent / "data" / "gpu"
REAL = DATA / "real"
T0 = datetime(2026, 7, 14, 6)


def ok(report, rows_: int, rejects_: int) -> None:
    assert report.format == "dcgmi_dmon", report.message
    assert_loaded(report, rows_, rejects_)


def profile(db: Path, machine: str) -> list[tuple]:
    """Each detail row's time, GPU, instance and the profiling fields dmon printed, rounded to 6 places."""
    return rows(
        db,
        "SELECT sample_at, gpu_index, gpu_instance_id, round(CAST(gr_engine_active AS DOUBLE), 6), "
        "round(CAST(sm_active AS DOUBLE), 6),"
        " round(CAST(sm_occupancy AS DOUBLE), 6), round(CAST(tensor_active AS DOUBLE), 6), "
        "round(CAST(dram_active AS DOUBLE), 6),"
        " round(CAST(fp64_active AS DOUBLE), 6), round(CAST(fp32_active AS DOUBLE), 6), "
        "round(CAST(fp16_active AS DOUBLE), 6)"
        " FROM gpu_sample_details WHERE machine_id = ? ORDER BY 1, 2, 3 NULLS FIRST",
        machine,
    )


def rejects(db: Path) -> list[tuple]:
    return rows(db, "SELECT line, reason FROM rejects ORDER BY line")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# ------------------------------------------------------------------ real captures


def test_real_run_without_times_is_refused_then_read_from_time_and_the_command(tmp_path: Path) -> None:
    # DCGM 4.2.3, 8 GPUs: every field N/A in the first sample, then values (NVIDIA/DCGM issue 244)
    db = tmp_path / "s.duckdb"
    (refused,) = ingest(db, REAL / "b76d14397.dmon")
    assert refused.status == "failed" and "\n" not in refused.message
    assert (
        refused.message.startswith(f"{REAL / 'b76d14397.dmon'}: dcgmi dmon prints no times")
        and "--time" in refused.message
    )
    # the pasted `dcgmi dmon -e ...` has no -d: dcgmi's default, a sample a second; host from the name
    ok(ingest(db, REAL / "b76d14397.dmon", time="2026-07-14T06:00:00Z")[0], 10, 0)
    # the all-N/A first sample stores nothing; GPU 0's and GPU 1's second rows exactly as printed
    assert profile(db, "b76d14397") == [
        (at(1), 0, None, 0.888, None, None, 0.178, None, None, None, 0.001),
        (at(1), 1, None, None, 0.777, None, None, None, 0.0, 0.046, None),
    ]
    assert rows(db, "SELECT count(*) FROM gpu_samples") == [(0,)]  # profiling fields only: no utilization
    # --interval wins over the command's -d
    other = tmp_path / "t.duckdb"
    ok(ingest(other, REAL / "b76d14397.dmon", time="2026-07-14T06:00:00Z", interval_s=5.0)[0], 10, 0)
    assert [p[0] for p in profile(other, "b76d14397")] == [at(5), at(5)]


def test_real_mig_instances_are_stored_under_the_gpu_above_them(tmp_path: Path) -> None:
    # the DCGM User Guide's MIG example (`# Entity` layout of DCGM 2.x): GPU 0, then its instances
    db = tmp_path / "s.duckdb"
    ok(ingest(db, REAL / "dcgm-guide-mig.dmon", host="dgx", time="2026-07-14T06:00:00Z")[0], 30, 0)
    stored = profile(db, "dgx")
    assert len(stored) == 30 and {p[1] for p in stored} == {0} and [p[2] for p in stored[:3]] == [None, 0, 1]
    # sample 2 (the `-g 8` command's default 1 s): GRACT and TENSO of the GPU and of each instance
    assert [(p[0], p[2], p[3], p[6]) for p in stored[6:9]] == [
        (at(2), None, 0.457, 0.442),
        (at(2), 0, 0.534, 0.516),
        (at(2), 1, 0.533, 0.515),
    ]
    assert [(p[0], p[2], p[3], p[6]) for p in stored[-3:]] == [
        (at(9), None, 0.845, 0.816),
        (at(9), 0, 0.986, 0.952),
        (at(9), 1, 0.985, 0.952),
    ]
    assert rows(db, "SELECT count(*) FROM gpu_samples") == [(0,)]


def test_real_instances_monitored_without_their_gpu_are_rejects_saying_so(tmp_path: Path) -> None:
    # a group of MIG instances alone (DCGM 3.x, NVIDIA/DCGM issue 151): no GPU row names their GPU
    db = tmp_path / "s.duckdb"
    report = ingest(db, REAL / "dcgm-151-instances.dmon", host="a100", time="2026-07-14T06:00:00Z")[0]
    ok(report, 0, 7)  # all seven rows: the file fails, naming the cause
    assert (
        "dcgm-151-instances.dmon:4: every row was rejected, nothing stored (7 rows); the likely cause, in all:"
        " GPU-I 21: no GPU row above it names its GPU"
        in report.message
        and "-i 0,i:0" in report.message
    )


def test_real_error_instead_of_rows_is_an_event_and_needs_no_time(tmp_path: Path) -> None:
    # `# Entity` header with a unit line (`C` under TMPTR), then dcgmi's refusal (NVIDIA/dcgm-exporter issue 7)
    db = tmp_path / "s.duckdb"
    ok(ingest(db, REAL / "dcgm-exporter-7-busy.dmon", host="node7")[0], 0, 0)
    assert rows(db, "SELECT machine_id, kind, detail, line FROM gpu_events") == [
        (
            "node7",
            "tool_error",
            "Error setting watches. Result: The third-party Profiling module returned an unrecoverable error",
            4,
        )
    ]


@pytest.mark.parametrize(
    "name", ["b76d14397.dmon", "dcgm-guide-mig.dmon", "dcgm-151-instances.dmon", "dcgm-exporter-7-busy.dmon"]
)
def test_real_captures_are_recognized(name: str) -> None:
    path = REAL / name
    fmt = detect_format(path, path.read_text())
    assert fmt is not None and fmt.name == "dcgmi_dmon"


def test_other_gpu_formats_are_not_taken_for_dcgmi() -> None:
    others = [
        p
        for p in DATA.rglob("*")
        if p.is_file()
        and p.suffix != ".md"
        and p.suffix != ".gz"
        and not p.name.startswith(("b76d14397", "dcgm-guide", "dcgm-151", "dcgm-exporter-7"))
    ]
    assert len(others) > 30
    assert [p.name for p in others if _sniff(p.read_text(errors="replace"))] == []
    # a Markdown heading is no header
    assert not _sniff("# Entity relationships\n\nGPU 0 is ...\n")


# ------------------------------------------------------------------ layouts as DeviceMonitor.cpp prints them

# DCGM 4.6: the entity column 16 wide, each field its format's width + 6, then 2 blanks; a value
# an entity does not have is left blank in its column (a MIG instance has no board power).
WIDTHS = {
    "GPUTL": 10,
    "POWER": 10,
    "TMPTR": 5,
    "FBUSD": 10,
    "FBFRE": 10,
    "FBRSV": 10,
    "DVNAM": 20,
    "GRACT": 5,
    "SMACT": 5,
    "PCITX": 20,
    "NVLRX": 20,
}


def dmon4(entity: str, values: list[str]) -> str:
    return (f"{entity:<16}" + "".join(f"{v:<{w + 8}}" for v, w in zip(values, WIDTHS.values(), strict=True))).rstrip()


HEADER4 = dmon4("#Entity", list(WIDTHS)) + "\n" + dmon4("ID", ["", "W", "C", "", "", "", "", "", "", "", ""]) + "\n"
NAME = "NVIDIA H100 80GB HBM3"


def test_dcgm4_blank_columns_device_fields_other_entities_and_repeated_headers(tmp_path: Path) -> None:
    log = tmp_path / "dcgmi-node01.log"
    log.write_text(
        "$ dcgmi dmon -e 203,155,150,252,251,253,50,1001,1002,1009,1012 -d 500\n"
        + HEADER4
        + dmon4("GPU 0", ["87", "412.500", "61", "40000", "40537", "563", NAME, "0.912", "0.884", "123456789", "N/A"])
        + "\n"
        + dmon4("GPU-I 3", ["", "", "", "20000", "19500", "268", "", "0.950", "0.930", "", ""])
        + "\n"  # line 5
        + dmon4("GPU-CI 3", ["", "", "", "", "", "", "", "0.950", "0.930", "", ""])
        + "\n"  # compute instance: left out
        + dmon4("GPU 0 LINK 2", ["", "", "", "", "", "", "", "", "", "", "5000"])
        + "\n"  # an NVLink: left out
        + dmon4("GPU 1", ["0", "70.250", "35", "0", "81000", "559", NAME, "0.000", "0.000", "0", "N/W"])
        + "\n"
        + HEADER4  # lines 9-10
        + dmon4("GPU 0", ["101", "400.000", "62", "40000", "40537", "563", NAME, "0.9x1", "0.884", "0", "0"])
        + "\n"
        + dmon4("GPU-I 3", ["", "", "", "20000", "19500", "268", "", "0.96", "0.94", "", ""])
        + "\n"
        + "-- pasted from the console --\n"  # line 13: no row
        + "Error getting values information. Return -5: Host engine connection invalid/disconnected\n"
        + dmon4("GPU 0", ["90", "410.000", "62", "40000", "40537", "563", NAME, "0.9", "0.8", "0", "0"])
        + "\n"
        + dmon4("GPU-I 3", ["", "", "", "20001", "19499", "268", "", "0.97", "0.95", "", ""])
        + "\n"
        + dmon4("GPU 1", ["1", "71.000", "36", "1", "80999", "559", NAME, "0.010", "0.000", "5", "6"])
        + "\n"
    )
    db = tmp_path / "s.duckdb"
    # 7 rows stored (GPU 0, its instance 3 and GPU 1; the compute instance and the link left out);
    # rejects: GPU 0's second row (11), the line that is no row (13)
    ok(ingest(db, log, time="2026-07-14T06:00:00Z")[0], 7, 2)
    assert rejects(db) == [
        (11, "unreadable graphics engine activity 0.9x1"),
        (13, "not a dcgmi dmon row (an entity such as GPU 0 or GPU-I 1, then one value per field)"),
    ]
    # -d 500: sample k at k/2 s; GPU 1 missed sample 1, so its next row is sample 2 (1 s), not 0.5 s
    assert rows(
        db, "SELECT sample_at, gpu_index, util_pct FROM gpu_samples WHERE machine_id = 'node01' ORDER BY 1, 2"
    ) == [(at(0), 0, 87.0), (at(0), 1, 0.0), (at(1), 0, 90.0), (at(1), 1, 1.0)]
    details = rows(
        db,
        "SELECT sample_at, gpu_index, gpu_instance_id, power_w, temp_c, mem_used_mib, mem_total_mib,"
        " round(CAST(gr_engine_active AS DOUBLE), 6), round(CAST(sm_active AS DOUBLE), 6), pcie_tx_bytes,"
        " nvlink_rx_bytes FROM gpu_sample_details ORDER BY 1, 2, 3 NULLS FIRST",
    )
    assert details == [
        # total = FBUSD + FBFRE + FBRSV; N/A and N/W are missing
        (at(0), 0, None, 412.5, 61.0, 40000.0, 81100.0, 0.912, 0.884, 123456789.0, None),
        (at(0), 0, 3, None, None, 20000.0, 39768.0, 0.95, 0.93, None, None),  # blank columns: missing
        (at(0), 1, None, 70.25, 35.0, 0.0, 81559.0, 0.0, 0.0, 0.0, None),
        (at(0.5), 0, 3, None, None, 20000.0, 39768.0, 0.96, 0.94, None, None),
        (at(1), 0, None, 410.0, 62.0, 40000.0, 81100.0, 0.9, 0.8, 0.0, 0.0),
        (at(1), 0, 3, None, None, 20001.0, 39768.0, 0.97, 0.95, None, None),
        (at(1), 1, None, 71.0, 36.0, 1.0, 81559.0, 0.01, 0.0, 5.0, 6.0),
    ]
    # a GPU name with blanks inside, read from its columns
    assert rows(db, "SELECT DISTINCT gpu_index, model FROM gpu_devices ORDER BY 1") == [(0, NAME), (1, NAME)]
    assert rows(db, "SELECT event_at, kind, line FROM gpu_events") == [(at(0.5), "tool_error", 14)]


def test_rows_out_of_range_and_gpu_utilization_are_checked(tmp_path: Path) -> None:
    log = tmp_path / "node02.log"
    log.write_text(
        HEADER4
        + dmon4("GPU 0", ["101", "400.000", "62", "1", "2", "3", NAME, "0.5", "1.2", "0", "0"])
        + "\n"
        + dmon4("GPU 1", ["50", "-1", "62", "1", "2", "3", NAME, "0.5", "0.5", "0", "0"])
        + "\n"
        + dmon4("GPU 2", ["50", "300.000", "62", "1", "2", "3", NAME, "0.5", "0.5", "0", "0"])
        + "\n"
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, log, time="2026-07-14T06:00:00Z")[0], 1, 2)  # GPU 2's row is good: the file loads
    assert rejects(db) == [(3, "GPU utilization outside 0-100: 101"), (4, "negative memory, power or clock")]


# DCGM 2.4-3.x: `#Entity` in 10 columns; a value an entity lacks is left out and the row closes up
HEADER3 = "#Entity   GRACT        TMPTR        SMACT\nID                     C\n"


def test_dcgm3_rows_that_close_up_a_missing_value_are_rejects(tmp_path: Path) -> None:
    log = tmp_path / "node03.log"
    log.write_text(
        HEADER3
        + "GPU 0     0.500        45           0.400\n"
        + "GPU-I 1   0.700        0.650\n"  # no temperature: which column is which cannot be told
        + "GPU 0     0.510        46           0.410\nGPU-I 1   0.710        0.660\n"
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, log, time="2026-07-14T06:00:00Z", interval_s=30.0)[0], 2, 2)
    assert rejects(db) == [(4, "2 values where the header has 3 fields"), (6, "2 values where the header has 3 fields")]
    assert rows(db, "SELECT sample_at, gpu_index, temp_c FROM gpu_sample_details ORDER BY 1") == [
        (at(0), 0, 45.0),
        (at(30), 0, 46.0),
    ]


def test_before_dcgm_2_4_instances_of_several_gpus_cannot_be_placed(tmp_path: Path) -> None:
    # `# Entity` (DCGM 2.3 and earlier) lists every GPU, then every instance
    log = tmp_path / "node04.log"
    log.write_text(
        "# Entity  GRACT\n      Id\n    GPU 0  0.100\n    GPU 1  0.200\n  GPU-I 0  0.300\n  GPU-I 7  0.400\n"
    )
    db = tmp_path / "s.duckdb"
    ok(ingest(db, log, time="2026-07-14T06:00:00Z")[0], 2, 2)
    assert rejects(db)[0] == (
        5,
        (
            "GPU-I 0: DCGM before 2.4 lists every GPU before every instance, so which of the 2 GPUs"
            " this instance belongs to cannot be told"
        ),
    )


def test_several_samples_need_an_interval_and_a_second_run_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "node05.log"
    log.write_text(HEADER3 + "GPU 0     0.500        45           0.400\nGPU 0     0.510        46           0.410\n")
    db = tmp_path / "s.duckdb"
    (refused,) = ingest(db, log, time="2026-07-14T06:00:00Z")
    assert refused.status == "failed" and "several samples per GPU and no times" in refused.message
    assert "--interval" in refused.message
    ok(ingest(db, log, time="2026-07-14T06:00:00Z", interval_s=2.0)[0], 2, 0)
    one = tmp_path / "node06.log"
    one.write_text(HEADER3 + "GPU 0     0.500        45           0.400\n")
    ok(ingest(db, one, time="2026-07-14T06:00:00Z")[0], 1, 0)  # one sample: no interval needed
    twice = tmp_path / "node07.log"
    twice.write_text(
        "dcgmi dmon -e 1001,150,1002\n"
        + HEADER3
        + "GPU 0     0.500        45           0.400\n"
        + "dcgmi dmon -e 1001,150,1002 -d 100\n"
        + HEADER3
        + "GPU 0     0.500        45           0.400\n"
    )
    (refused,) = ingest(db, twice, time="2026-07-14T06:00:00Z")
    assert refused.status == "failed" and refused.message.startswith(f"{twice}:5: a second dcgmi dmon run starts here")


def test_rows_before_any_header_and_a_cut_last_line(tmp_path: Path) -> None:
    log = tmp_path / "node08.log"
    log.write_text("GPU 0     0.500        45           0.400\n" + HEADER3)
    (refused,) = ingest(tmp_path / "s.duckdb", log, format_name="dcgmi_dmon", time="2026-07-14T06:00:00Z")
    assert refused.status == "failed" and refused.message.startswith(f"{log}:1: rows without a dcgmi dmon header")
    cut = tmp_path / "node09.log"
    cut.write_text(
        "Started host engine version 1.4.3\n" + HEADER3 + "GPU 0     0.500        45           0.400\nGPU 0     0.5"
    )
    db = tmp_path / "t.duckdb"
    ok(ingest(db, cut, time="2026-07-14T06:00:00Z", interval_s=1.0)[0], 1, 2)
    assert rejects(db) == [
        (1, "not the tool's output: a shell prompt or a note before the first header"),
        (5, CUT_LINE),
    ]


@pytest.mark.parametrize(
    "name", keep_by_default(["b76d14397.dmon", "dcgm-guide-mig.dmon", "dcgm-151-instances.dmon"], {"b76d14397.dmon"})
)
def test_lines_read_in_small_chunks_store_what_whole_reads_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from gpucluster_analysis.ingest import lines as tool_lines

    options = {"time": "2026-07-14T06:00:00Z", "host": "n"}

    def stored(db: Path) -> tuple:
        return (
            rows(db, "SELECT * EXCLUDE (file_id) FROM gpu_sample_details ORDER BY ALL"),
            rows(db, "SELECT line, reason, text FROM rejects ORDER BY ALL"),
        )

    whole = ingest(tmp_path / "a.duckdb", REAL / name, **options)[0]
    monkeypatch.setattr(tool_lines, "CHUNK_BYTES", 37)  # chunk ends inside lines, several chunks per line
    chunked = ingest(tmp_path / "b.duckdb", REAL / name, **options)[0]
    assert (chunked.status, chunked.rows, chunked.rejects) == (whole.status, whole.rows, whole.rejects)
    assert stored(tmp_path / "b.duckdb") == stored(tmp_path / "a.duckdb")


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("[root@b76d14397 sanmu]# dcgmi dmon -e 1001,1002", 1.0),
        ("$ dcgmi dmon -e 1001,1004 -g 8 -d 3000 -c 5", 3.0),
        ("/bin/dcgmi dmon -e 1001 --delay 250 | tee dmon.log", 0.25),
        ("dcgmi dmon -e 1001 -d=100", 0.1),
        ("dcgmi discovery -l", None),
        ("GPU 0     0.500", None),
    ],
)
def test_interval_of_a_pasted_command(line: str, seconds: float | None) -> None:
    assert command_delay_s(line) == seconds


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("dcgmi-node01.log", "node01"),
        ("node01.dcgmi.log", "node01"),
        ("b76d14397.dmon", "b76d14397"),
        ("dcgmi.log", None),
    ],
)
def test_host_from_a_dcgmi_file_name(name: str, host: str | None) -> None:
    assert host_from_name(Path(name)) == host


def test_cli_refuses_in_one_line_and_reads_with_time(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.duckdb")
    bad = runner.invoke(app, ["ingest", str(REAL / "dcgm-guide-mig.dmon"), "--host", "dgx", "--db", db])
    assert bad.exit_code == ExitCode.USAGE and "Traceback" not in bad.output
    errors = [line for line in bad.stderr.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1 and "dcgm-guide-mig.dmon: dcgmi dmon prints no times" in errors[0] and "--time" in errors[0]
    good = runner.invoke(
        app,
        ["ingest", str(REAL / "dcgm-guide-mig.dmon"), "--host", "dgx", "--time", "2026-07-14T06:00:00Z", "--db", db],
    )
    assert good.exit_code == 0, good.output
    assert rows(Path(db), "SELECT count(*), min(sample_at), max(sample_at) FROM gpu_sample_details") == [
        (30, at(0), at(9))
    ]
