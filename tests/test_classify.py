"""Failure classification: signatures, failure evidence, precedence on realistic logs, benign logs,
the synthetic truth, the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.classify import CATEGORIES, classify_file, classify_text, load_signatures
from gpucluster_analysis.classify.engine import (
    HEAD_BYTES,
    TAIL_BYTES,
    classify_bytes,
    iter_lines,
    normalize_line,
    read_bounded,
)
from gpucluster_analysis.classify.rules import CAUSE, DERIVED_REASONS, EVIDENCE_KINDS, parse_signatures
from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode, RulesError
from gpucluster_analysis.failure_categories import SCHEDULER_ONLY_REASONS
from gpucluster_analysis.logline import line_level
from tests.conftest import REPO

SIGNATURES = load_signatures()
CASES = REPO / "tests" / "data" / "classify"
REAL = CASES / "real"
BENIGN = CASES / "benign"
SYNTH = REPO / "examples" / "synthetic"
runner = CliRunner()


def _examples(kind: str) -> list[tuple[str, str]]:
    return [(s.id, line) for s in SIGNATURES for line in getattr(s, kind)]


@pytest.mark.parametrize(("sid", "line"), _examples("examples"))
def test_signature_matches_its_examples(sid: str, line: str) -> None:
    sig = next(s for s in SIGNATURES if s.id == sid)
    assert sig.matches(normalize_line(line)), f"{sid} should match {line!r}"


@pytest.mark.parametrize(("sid", "line"), _examples("counter_examples"))
def test_signature_does_not_match_its_counter_examples(sid: str, line: str) -> None:
    sig = next(s for s in SIGNATURES if s.id == sid)
    assert not sig.matches(normalize_line(line)), f"{sid} should not match {line!r}"


def test_every_taxonomy_reason_has_a_signature() -> None:
    covered = {s.reason for s in SIGNATURES if s.kind == CAUSE}
    assert set(CATEGORIES) - set(DERIVED_REASONS) - set(SCHEDULER_ONLY_REASONS) <= covered


def test_every_evidence_kind_is_used() -> None:
    assert {s.kind for s in SIGNATURES if s.kind != CAUSE} == set(EVIDENCE_KINDS)


def test_ids_are_unique() -> None:
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.expected")))
def test_precedence_case(case: str) -> None:
    expected = (CASES / f"{case}.expected").read_text().strip()
    result = classify_file(CASES / f"{case}.log", SIGNATURES)
    assert result.reason == expected, "\n".join(result.explain())
    assert result.category == CATEGORIES[expected]


def test_there_are_enough_precedence_cases() -> None:
    assert len(list(CASES.glob("*.expected"))) >= 15


# --- real logs from public bug reports (sources in tests/data/classify/real/SOURCES.md) ---

# Cases the classifier is known to get wrong, with why; a fix makes the xfail fail (strict).
KNOWN_MISSES: dict[str, str] = {}


def _real_cases() -> list[object]:
    out: list[object] = []
    for exp in sorted(REAL.glob("*.expected")):
        marks = [pytest.mark.xfail(reason=KNOWN_MISSES[exp.stem], strict=True)] if exp.stem in KNOWN_MISSES else []
        out.append(pytest.param(exp.stem, marks=marks, id=exp.stem))
    return out


@pytest.mark.parametrize("case", _real_cases())
def test_real_log(case: str) -> None:
    expected = (REAL / f"{case}.expected").read_text().strip()
    result = classify_file(REAL / f"{case}.log", SIGNATURES)
    assert result.reason == expected, "\n".join(result.explain())


def test_real_set_is_broad_and_sourced() -> None:
    expected = {p.stem: p.read_text().strip() for p in REAL.glob("*.expected")}
    assert len(expected) >= 60
    assert set(expected.values()) >= set(CATEGORIES) - set(DERIVED_REASONS) - set(
        SCHEDULER_ONLY_REASONS
    )  # every reason has a real case
    assert all((REAL / f"{stem}.log").exists() for stem in expected)
    sources = (REAL / "SOURCES.md").read_text()
    assert all(f"| `{stem}` | {reason} | http" in sources for stem, reason in expected.items())


def test_prefilters_never_hide_a_match() -> None:
    """Every real and precedence log classifies the same with the literal prefilters
    dropped (each signature then tried on every line)."""
    unfiltered = [dataclasses.replace(s, prefilter=()) for s in SIGNATURES]
    for log in [
        *(e.with_suffix(".log") for e in [*CASES.glob("*.expected"), *REAL.glob("*.expected")]),
        *BENIGN.glob("*.log"),
    ]:
        data = log.read_bytes()
        fast, slow = classify_bytes(data, SIGNATURES), classify_bytes(data, unfiltered)
        assert [(m.signature_id, m.line_number, m.line) for m in fast.matched] == [
            (m.signature_id, m.line_number, m.line) for m in slow.matched
        ], log.stem
        assert (fast.reason, fast.evidence) == (slow.reason, slow.evidence), log.stem


def _synthetic_attempts() -> list[dict]:
    truth = json.loads((SYNTH / "truth.json").read_text())
    return [a for a in truth["attempts"] if a.get("log_dir") and a.get("failure_reason")]


def test_synthetic_logs_classify_to_their_truth() -> None:
    attempts = _synthetic_attempts()
    assert attempts
    misses = []
    for a in attempts:
        d = SYNTH / a["log_dir"]
        # in time order: the training steps of stdout came before the failure stderr ends with
        text = "\n".join(
            (d / name).read_text(encoding="utf-8", errors="replace")
            for name in ("stdout.log", "stderr.log")
            if (d / name).exists()
        )
        got = classify_text(text, SIGNATURES)
        if got.reason != a["failure_reason"]:
            misses.append((a["log_dir"], a["failure_reason"], got.reason, got.line))
    print("\n".join(map(str, misses)))
    assert misses == []


# --- noise -------------------------------------------------------------------


def test_normalize_strips_prefixes_and_ansi() -> None:
    assert normalize_line("[rank3]: KeyError: 'x'") == "KeyError: 'x'"
    assert normalize_line("0: ValueError: bad") == "ValueError: bad"
    assert normalize_line("> > IndexError: list index out of range") == "IndexError: list index out of range"
    assert normalize_line("\x1b[31mTypeError\x1b[0m: no") == "TypeError: no"
    assert normalize_line("│ AttributeError: x  │") == "AttributeError: x"
    assert (
        normalize_line("2024-03-01T12:00:00.123Z node01: SyntaxError: invalid syntax") == "SyntaxError: invalid syntax"
    )
    assert normalize_line("^CKeyboardInterrupt") == "KeyboardInterrupt"


def test_carriage_returns_split_progress_bars() -> None:
    lines = iter_lines("Epoch 1: 10%\rEpoch 1: 20%\rRuntimeError: boom\nnext")
    assert (1, "RuntimeError: boom") in lines and (2, "next") in lines


def test_first_traceback_of_a_chain_wins() -> None:
    text = (
        "Traceback (most recent call last):\nIndexError: list index out of range\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\nKeyError: 'x'\n"
    )
    result = classify_text(text, SIGNATURES)
    assert result.reason == "index_error" and result.line_number == 2
    assert [m.signature_id for m in result.matched] == [
        "py_index_error",
        "py_key_error",
    ]  # generic RuntimeError-style matches yield to the typed ones


def test_none_when_the_log_shows_no_failure() -> None:
    result = classify_text(
        "all good\nstep 10 loss 2.1\nsrun: error: node1: task 0: Exited with exit code 0\n", SIGNATURES
    )
    assert (result.reason, result.category, result.signature_id, result.matched) == ("none", "none", None, [])
    assert result.explain() == ["no failure evidence counts: none (the log shows no failure; a warning is not a cause)"]


def test_progress_bar_glued_to_traceback_and_duplicated_ranks() -> None:
    text = (
        "[rank1]: Epoch 1:  40%|████      | 4/10 [00:04<00:06, 1.0it/s]\r[rank1]: Epoch 1:  50%|█████     | 5/10"
        "[rank1]: Traceback (most recent call last):\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 3, in <module>\n'
        "[rank1]: KeyError: 'label'\n"
        "[rank0]: KeyError: 'label'\n"
    )
    result = classify_text(text, SIGNATURES)
    # the first of the duplicated rank lines is reported: line 4 of the text
    assert (result.reason, result.line_number, result.line) == ("key_error", 4, "KeyError: 'label'")


def test_timestamps_ansi_hosts_and_rich_boxes() -> None:
    text = (
        "2024-03-01T12:00:00.123Z node07: \x1b[1;31mRuntimeError\x1b[0m: CUDA error: an illegal memory "
        "access was encountered\n"
        "│ ❱ 566 │   │   return torch._C._cuda_synchronize()   │\n"
        "╰──────────────────────────────────────────────────────╯\n"
    )
    result = classify_text(text, SIGNATURES)
    assert (
        result.reason == "cuda_illegal_access"
        and result.line == "RuntimeError: CUDA error: an illegal memory access was encountered"
    )


def test_syslog_escaped_carriage_returns() -> None:
    text = "#015 86%|████████▋ | 56/65 [00:04<00:00]#015AssertionError: device ids must be set\n"
    assert classify_text(text, SIGNATURES).reason == "assertion_error"


def test_non_utf8_bytes(tmp_path: Path) -> None:
    p = tmp_path / "latin1.log"
    p.write_bytes(b"Fehler beim \xd6ffnen\n\xff\xfeOSError: [Errno 28] No space left on device: '/scr\xe4tch'\n")
    result = classify_file(p, SIGNATURES)
    assert (result.reason, result.line_number) == ("disk_full", 2)
    assert "\ufffd" in (result.line or "")


def test_bytes_and_text_agree() -> None:
    data = (CASES / "oom_then_cancelled.log").read_bytes()
    a, b = classify_bytes(data, SIGNATURES), classify_text(data.decode(), SIGNATURES)
    assert (a.reason, a.line_number, a.line) == (b.reason, b.line_number, b.line)


def _huge_log(path: Path, head: bytes, middle: bytes, tail: bytes) -> None:
    filler = b"step 1000 loss=2.3456 lr=1e-4 grad_norm=0.5\n"  # 44 bytes, no literal in it
    with open(path, "wb") as f:
        f.write(head)
        f.write(filler * (HEAD_BYTES // len(filler) + 10))
        f.write(middle)
        f.write(filler * (TAIL_BYTES // len(filler) + 10))
        f.write(tail)


def test_huge_log_reads_only_head_and_tail(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    _huge_log(p, b"", b"ModuleNotFoundError: No module named 'x'\n", b"")
    result = classify_file(p, SIGNATURES)
    # the middle is never read, and the head and tail show no failure
    assert (result.reason, result.truncated, result.bytes_read) == ("none", True, HEAD_BYTES + TAIL_BYTES)


def test_huge_log_tail_match_has_no_line_number(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    _huge_log(p, b"ImportError: cannot import name 'x'\n", b"", b"Killed\n")
    result = classify_file(p, SIGNATURES)
    assert (result.reason, result.truncated, result.line_number, result.line) == ("host_oom", True, None, "Killed")
    head_match = next(m for m in result.matched if m.signature_id == "py_import_error")
    assert head_match.line_number == 1  # lines in the head are counted exactly
    assert any("tail of a cut file" in line for line in result.explain())


def test_small_log_is_read_whole(tmp_path: Path) -> None:
    p = tmp_path / "small.log"
    p.write_bytes(b"ok\n" * 10 + b"Segmentation fault (core dumped)\n")
    result = classify_file(p, SIGNATURES)
    # 10 "ok" lines, the fault on line 11; 3 * 10 + 33 bytes
    assert (result.reason, result.line_number, result.truncated, result.bytes_read) == ("segfault", 11, False, 63)


def test_bounded_read_keeps_head_and_tail(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    p.write_bytes(b"ImportError: x\n" + b"." * 5000 + b"\nKilled\n\xff\n")
    text = read_bounded(p, head=100, tail=100)
    assert text.startswith("ImportError") and "Killed" in text and "\ufffd" in text
    assert len(text) < 300


# --- rules files ---------------------------------------------------------------

GOOD = """
[[signature]]
id = "my_sig"
reason = "value_error"
pattern = 'frobnicate failed'
priority = 999
description = "d"
examples = ["frobnicate failed"]
counter_examples = []
"""


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (GOOD.replace("counter_examples = []", 'counter_examples = []\ncolour = "red"'), "unknown key(s) ['colour']"),
        (GOOD.replace('reason = "value_error"', 'reason = "bad_luck"'), "unknown reason 'bad_luck'"),
        (GOOD.replace("'frobnicate failed'", "'(unclosed'"), "pattern does not compile"),
        (GOOD.replace("priority = 999\n", ""), "missing key(s) ['priority']"),
        (GOOD + GOOD, "duplicate id"),
        ("[[signature]\n", "not valid TOML"),
        (GOOD.replace("priority = 999", 'priority = "high"'), "priority must be an integer"),
    ],
)
def test_broken_rules_raise_rules_error(text: str, fragment: str, tmp_path: Path) -> None:
    with pytest.raises(RulesError) as err:
        parse_signatures(text, "my.toml")
    message = str(err.value)
    assert fragment in message and "my.toml" in message and "\n" not in message
    assert err.value.exit_code == ExitCode.USAGE
    if "signature" in fragment or fragment.startswith(("unknown", "pattern", "missing", "duplicate", "priority")):
        assert "'my_sig'" in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            GOOD.replace('examples = ["frobnicate failed"]', 'examples = ["nothing to see"]'),
            "pattern does not match example 1",
        ),
        (
            GOOD.replace("counter_examples = []", 'counter_examples = ["frobnicate failed again"]'),
            "pattern matches counter-example 1",
        ),
        (
            GOOD.replace("priority = 999", 'priority = 999\nprefilter = ["quux"]'),
            "contains none of the prefilter literals",
        ),
        (GOOD.replace("priority = 999", 'priority = 999\nprefilter = "frobnicate"'), "prefilter must be a list"),
        (GOOD.replace("'frobnicate failed'", "'[z-a] failed'"), "pattern does not compile"),
        (GOOD.replace("'frobnicate failed'", "'frobnicate(?! later) failed'"), "pattern uses a negative lookahead"),
        (GOOD.replace("priority = 999", "priority = 999\nunless = '(unclosed'"), "unless does not compile"),
        (GOOD.replace("priority = 999", "priority = 999\nunless = 'frobnicate'"), "pattern does not match example 1"),
        (GOOD.replace("priority = 999", "priority = 999\nunless = 3"), "unless must be a string"),
    ],
)
def test_signature_checks_name_the_signature(text: str, fragment: str) -> None:
    with pytest.raises(RulesError) as err:
        parse_signatures(text, "my.toml")
    message = str(err.value)
    assert fragment in message and "my.toml: signature 'my_sig'" in message and "\n" not in message


def test_retried_request_warning_yields_to_the_real_error() -> None:
    warning = (
        "WARNING:huggingface_hub.utils._http:'(MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): "
        "Max retries exceeded with url: /x (Caused by NewConnectionError('<x>: Failed to establish a new connection: "
        "[Errno 101] Network is unreachable'))\"), '(Request ID: 1)')' thrown while requesting HEAD https://huggingface.co/x\n"
        "Retrying in 1s [Retry 1/5].\n"
    )
    crash = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nKeyError: 'labels'\n"
    assert classify_text(warning + crash, SIGNATURES).reason == "key_error"
    assert classify_text(warning, SIGNATURES).reason == "network_error"


def test_minimal_user_signature_needs_no_description_or_counter_examples() -> None:
    text = (
        '[[signature]]\nid = "my_sig"\nreason = "value_error"\npattern = "frobnicate failed"\npriority = '
        '999\nexamples = ["frobnicate failed"]\n'
    )
    (sig,) = parse_signatures(text, "my.toml")
    assert sig.description == "" and sig.counter_examples == ()
    assert classify_text("frobnicate failed\n", [sig]).signature_id == "my_sig"
    with pytest.raises(RulesError, match="my.toml: signature 'my_sig': description must be a string"):
        parse_signatures(text + "description = 3\n", "my.toml")


def test_prefilter_literals_are_case_blind() -> None:
    sigs = parse_signatures(GOOD.replace("priority = 999", 'priority = 999\nprefilter = ["FROBNICATE"]'), "my.toml")
    assert sigs[0].prefilter == ("frobnicate",)
    assert classify_text("ok\nfrobnicate failed\n", sigs).line_number == 2


def test_user_signature_without_prefilter_still_matches() -> None:
    sigs = [*SIGNATURES, *parse_signatures(GOOD, "my.toml")]  # no prefilter: every line is tried
    assert classify_text("step 3\nfrobnicate failed\n", sigs).signature_id == "my_sig"


def test_unreadable_signatures_files(tmp_path: Path) -> None:
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"# caf\xe9\n")
    with pytest.raises(RulesError, match=r"latin\.toml: not UTF-8"):
        load_signatures([latin])
    with pytest.raises(RulesError, match=r"missing\.toml: cannot read signatures file"):
        load_signatures([tmp_path / "missing.toml"])


def test_user_file_adds_and_overrides(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    override = (
        GOOD.replace('id = "my_sig"', 'id = "py_key_error"')
        .replace('reason = "value_error"', 'reason = "file_not_found"')
        .replace("frobnicate failed", "KeyError")
    )
    extra.write_text(GOOD + override)
    sigs = load_signatures([extra])
    assert len(sigs) == len(SIGNATURES) + 1
    assert classify_text("frobnicate failed", sigs).signature_id == "my_sig"
    assert next(s for s in sigs if s.id == "py_key_error").reason == "file_not_found"
    assert classify_text("KeyError: 'x'", sigs).reason == "file_not_found"


# --- CLI ---------------------------------------------------------------------


def test_cli_plain_output() -> None:
    log = CASES / "keyerror_path.log"
    result = runner.invoke(app, ["classify", str(log), str(CASES / "nothing.log")])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows[0] == [str(log), "key_error", "user", "py_key_error", "5"]
    assert rows[1][1:] == ["none", "none", "-", "-"]


def test_cli_json_and_explain() -> None:
    result = runner.invoke(app, ["classify", "--json", "--explain", str(CASES / "xid79_illegal.log")])
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout.splitlines()[0])
    assert obj["reason"] == "gpu_hw" and obj["category"] == "infrastructure" and obj["signature"] == "xid_hardware"
    assert obj["line_number"] == 2 and "Xid" in obj["line"] and obj["truncated"] is False
    assert [m["signature"] for m in obj["matched"]][:1] == ["xid_hardware"]
    text = runner.invoke(app, ["classify", "--explain", str(CASES / "xid79_illegal.log")]).stdout
    assert "winner" in text and "loses" in text


def test_cli_missing_file_is_one_line_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["classify", str(tmp_path / "nope.log")])
    assert result.exit_code == ExitCode.USAGE
    errors = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1 and "nope.log" in errors[0]
    assert "Traceback" not in result.output


def test_cli_bad_signatures_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("'frobnicate failed'", "'(unclosed'"))
    result = runner.invoke(app, ["classify", "--signatures", str(bad), str(CASES / "nothing.log")])
    assert result.exit_code == ExitCode.USAGE
    errors = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert "bad.toml" in errors[0] and "'my_sig'" in errors[0] and "pattern does not compile" in errors[0]


# --- benign logs: a warning is not a root cause (sources in tests/data/classify/benign/SOURCES.md) ---


def _benign_cases() -> list[str]:
    return sorted(p.stem for p in BENIGN.glob("*.log"))


@pytest.mark.parametrize("case", _benign_cases())
def test_benign_log_has_no_failure_reason(case: str) -> None:
    result = classify_file(BENIGN / f"{case}.log", SIGNATURES)
    assert (result.reason, result.category) == ("none", "none"), "\n".join(result.explain())


def test_benign_set_is_broad_and_sourced() -> None:
    cases = _benign_cases()
    assert len(cases) >= 100
    sources = (BENIGN / "SOURCES.md").read_text()
    assert all(f"| `{case}` |" in sources for case in cases)
    assert all(
        line.rstrip().endswith(" |") and "| http" in line for line in sources.splitlines() if line.startswith("| `")
    )


# --- none, unknown, and what does not count ----------------------------------------

TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'


@pytest.mark.parametrize(
    ("text", "line_number", "evidence"),
    [
        (TRACEBACK + "train.Diverged: step 400\n", 1, "python_traceback"),
        ("epoch 1\nProcess finished with exit code 2\n", 2, "nonzero_exit"),
        ("epoch 1\nterminate called without an active exception\n", 2, "fatal_signal"),
        ("Job failed after 3 retries\n", 1, "run_failed"),
    ],
)
def test_unknown_when_a_failure_has_no_name(text: str, line_number: int, evidence: str) -> None:
    result = classify_text(text, SIGNATURES)
    assert (result.reason, result.category, result.signature_id, result.line_number) == (
        "unknown",
        "unknown",
        None,
        line_number,
    )
    explained = result.explain()
    assert explained[0].startswith(f"{evidence} (failure evidence, line {line_number}): ")
    assert explained[-1] == "no signature names this failure: unknown"


def test_a_bare_nccl_warn_is_a_note_not_an_nccl_error() -> None:
    # issue 10: a healthy run that printed this answered nccl_error through nccl_watchdog_timeout
    note = (
        "node1:42:42 [0] NCCL INFO Using network Socket\nnode1:42:42 [0] NCCL WARN NET/IB : No device "
        "found.\nstep 1 loss 2.0\n"
    )
    result = classify_text(note, SIGNATURES)
    assert (result.reason, [e.evidence_id for e in result.evidence]) == ("none", ["nccl_transport_fallback"])
    assert "a routine note, not a failure" in result.explain()[0]
    broken = "n1:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed\n"
    assert classify_text(note + broken, SIGNATURES).reason == "nccl_error"


def test_success_discounts_what_came_before_it() -> None:
    setup = (
        "srun: error: node2: task 0: Exited with exit code 1\nls: cannot access '/pkl_coco': No such file or "
        "directory\n"
    )
    done = ':::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}\n'
    result = classify_text(setup + "epoch 3\n" + done, SIGNATURES)
    assert result.reason == "none"
    lines = result.explain()
    assert lines[0].startswith("mlperf_run_stop_success (success, line 4): ")
    assert any(
        line.startswith("srun_task_failed (does not count, line 1): before the success at line 4") for line in lines
    )
    # a failure after the success still counts
    assert classify_text(setup + done + "Segmentation fault (core dumped)\n", SIGNATURES).reason == "segfault"


def test_preemption_then_resume_is_not_a_cause() -> None:
    preempted = "slurmstepd: error: *** JOB 42 ON gpu07 CANCELLED AT 2024-03-01T12:00:00 DUE TO PREEMPTION ***\n"
    resumed = "Restoring states from the checkpoint path at /ckpt/last.ckpt\nEpoch 4: 10%\n"
    assert classify_text(preempted, SIGNATURES).reason == "preempted"
    assert classify_text(preempted + resumed, SIGNATURES).reason == "none"


def test_batch_size_finder_out_of_memory_is_not_a_cause() -> None:
    probe = (
        "Batch size 256 failed, trying batch size 128\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "Finished batch size finder, will continue with full run using batch size 128\n"
    )
    assert classify_text(probe, SIGNATURES).reason == "none"
    assert classify_text(probe + "torch.OutOfMemoryError: CUDA out of memory.\n", SIGNATURES).reason == "cuda_oom"


def test_handled_traceback_does_not_count() -> None:
    caught = (
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f71>\n"
        + TRACEBACK
        + "AssertionError: can only test a child process\n"
    )
    result = classify_text("Epoch 5/15\n" + caught + "Epoch 6/15\n", SIGNATURES)
    assert result.reason == "none"
    assert any("in a traceback the program caught (exception_ignored, line 2)" in line for line in result.explain())
    finalizer = (
        'Traceback (most recent call last):\n  File "/usr/lib/python3.10/multiprocessing/util.py", line 300, '
        "in _run_finalizers\n"
        "FileNotFoundError: [Errno 2] No such file or directory\n"
    )
    assert classify_text(finalizer, SIGNATURES).reason == "none"
    # the same traceback without the header is the cause; a header does not reach a traceback far below it
    assert (
        classify_text(TRACEBACK + "AssertionError: can only test a child process\n", SIGNATURES).reason
        == "assertion_error"
    )
    far = "Exception ignored in: <function f>\n" + "step\n" * 5 + TRACEBACK + "AssertionError: x\n"
    assert classify_text(far, SIGNATURES).reason == "assertion_error"
    # a handled traceback does not hide the next one
    assert classify_text(caught + TRACEBACK + "KeyError: 'labels'\n", SIGNATURES).reason == "key_error"


def test_warning_names_its_reason_only_beside_a_failure() -> None:
    fallback = (
        "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please "
        "make sure the"
        " missing libraries mentioned above are installed properly if you would like to use GPU.\n"
    )
    result = classify_text(fallback + "Epoch 1/10\n", SIGNATURES)
    assert result.reason == "none"
    assert any(
        line.startswith("gpu_library_warning (does not count, line 1): a warning, and nothing else")
        for line in result.explain()
    )
    assert classify_text(fallback + "Process finished with exit code 1\n", SIGNATURES).reason == "cuda_driver"


EVIDENCE = """
[[evidence]]
id = "my_evidence"
kind = "failure"
pattern = 'frobnication aborted'
examples = ["frobnication aborted"]
"""


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (EVIDENCE.replace('kind = "failure"', 'kind = "doom"'), "unknown kind 'doom'"),
        (
            EVIDENCE.replace('examples = ["frobnication aborted"]', 'examples = ["nothing"]'),
            "pattern does not match example 1",
        ),
        (EVIDENCE.replace('kind = "failure"\n', ""), "missing key(s) ['kind']"),
        (EVIDENCE.replace('kind = "failure"', 'kind = "failure"\npriority = 3'), "unknown key(s) ['priority']"),
        (EVIDENCE + GOOD.replace('id = "my_sig"', 'id = "my_evidence"'), "duplicate id"),
        (GOOD.replace("priority = 999", "priority = 999\nwarning = 1"), "warning must be true or false"),
        (GOOD.replace('reason = "value_error"', 'reason = "none"'), "unknown reason 'none'"),
    ],
)
def test_broken_evidence_is_a_one_line_error(text: str, fragment: str) -> None:
    with pytest.raises(RulesError) as err:
        parse_signatures(text, "my.toml")
    assert fragment in str(err.value) and "my.toml" in str(err.value) and "\n" not in str(err.value)


def test_user_evidence_is_used(tmp_path: Path) -> None:
    extra = tmp_path / "site.toml"
    extra.write_text(EVIDENCE)
    assert classify_text("frobnication aborted\n", SIGNATURES).reason == "none"
    assert classify_text("frobnication aborted\n", load_signatures([extra])).reason == "unknown"


def test_cli_explains_none_and_unknown(tmp_path: Path) -> None:
    unknown = tmp_path / "unknown.log"
    unknown.write_text("step 1\nProcess finished with exit code 3\n")
    result = runner.invoke(
        app, ["classify", "--explain", str(CASES / "nothing.log"), str(unknown)], catch_exceptions=False
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split("\t")[1:] == ["none", "none", "-", "-"]
    assert lines[1] == "  no failure evidence counts: none (the log shows no failure; a warning is not a cause)"
    assert lines[2].split("\t")[1:] == ["unknown", "unknown", "-", "2"]
    assert lines[3].startswith("  nonzero_exit (failure evidence, line 2): ")
    obj = json.loads(runner.invoke(app, ["classify", "--json", "--explain", str(unknown)]).stdout)
    assert (obj["reason"], obj["line_number"], obj["evidence"][0]["id"]) == ("unknown", 2, "nonzero_exit")
    assert obj["explain"][-1] == "no signature names this failure: unknown"


# --- log levels (issue #28, part 2) -------------------------------------------------


@pytest.mark.parametrize(
    ("line", "level"),
    [
        (
            "torch._dynamo.convert_frame: [WARNING] FileNotFoundError: [Errno 2] No such file or directory: 'ldconfig'",
            "warning",
        ),
        ("INFO:2024-01-01 12:00:00,000:jax._src.xla_bridge: Unable to initialize backend 'tpu'", "info"),
        ("WARNING:huggingface_hub.utils._http:'(ReadTimeoutError(...)' Retrying in 1s [Retry 1/5].", "warning"),
        ("W1203 10:11:12.123456 140245 deprecation.py:323] From x", "warning"),
        ("E0101 10:11:12.123456 140245 foo.cc:12] bad", "error"),
        ("[W socket.cpp:663] [c10d] The client socket has failed to connect", "warning"),
        ("2023-01-01 10:00:00.000 | WARNING  | __main__:main:12 - x", "warning"),
        ("2021-10-11 14:38:12 | INFO     | yolox.core.trainer:246 - epoch", "info"),
        ("2022-03-17 11:56:00,123 - mmdet - INFO - Epoch [1][250/7674]", "info"),
        ("[NeMo W 2024-05-01 10:00:00 nemo_logging:349] warn", "warning"),
        ("gpu1:123:456 [3] proxy.cc:1497 NCCL WARN Could not receive", "warning"),
        ("gpu1:123:456 [0] NCCL INFO NET/Socket : Using", "info"),
        ("slurmstepd: error: Detected 1 oom_kill event", "error"),
        ("[rank0]: torch.OutOfMemoryError: CUDA out of memory", None),
        ("Traceback (most recent call last):", None),
        ("UserWarning: this is deprecated", None),
        # Python's warnings module: file, line, category
        ("/usr/lib/python3.10/multiprocessing/resource_tracker.py:237: UserWarning: resource_tracker: x", "warning"),
        ("C:\\venv\\lib\\site-packages\\torch\\x.py:12: FutureWarning: y", "warning"),
        ("train.py:12: error: y", None),
    ],
)
def test_the_level_a_line_says(line: str, level: str | None) -> None:
    assert line_level(line) == level


@pytest.mark.parametrize(
    "text",
    [
        # the issue's healthy runs: a compile fallback, a missing optional backend, a retried request
        "torch._dynamo.convert_frame: [WARNING] FileNotFoundError: [Errno 2] No such file or directory: 'ldconfig'\n"
        "step 10 loss 2.1\n",
        "INFO:2024-01-01 12:00:00,000:jax._src.xla_bridge: Unable to initialize backend 'tpu': "
        "UNIMPLEMENTED: libtpu.so: cannot open shared object file: No such file or directory\nstep 1 loss 3.0\n",
        # a warning logged with its traceback: the traceback is part of the warning
        "torch._dynamo.convert_frame: [WARNING] Traceback (most recent call last):\n"
        "  File \"x.py\", line 1, in f\nFileNotFoundError: [Errno 2] No such file or directory: 'ldconfig'\n",
        # NCCL and c10d teardown warnings after the run reported success
        ':::MLLOG {"event_type": "INTERVAL_END", "key": "run_stop", "metadata": {"status": "success"}}\n'
        "n1:1:2 [3] proxy.cc:1521 NCCL WARN [Proxy Service 5] Failed to execute operation Close from rank 1\n",
    ],
)
def test_a_line_logged_below_error_names_no_failure(text: str) -> None:
    result = classify_text(text, SIGNATURES)
    assert result.reason == "none", "\n".join(result.explain())


def test_a_signature_may_count_at_a_level_and_explain_says_the_level() -> None:
    """NCCL logs its own failures as WARN: nccl_error counts at that level (counts_at)."""
    result = classify_text("n1:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed\n", SIGNATURES)
    assert result.reason == "nccl_error"
    assert "level warning" in result.explain()[0]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("rank 3 done\n*** Your MPI job will now abort.\n", "mpi_failure"),
        (
            "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062)\n"
            "RuntimeError: NCCL error: unhandled cuda error\n",
            "gpu_hw",
        ),
        (
            "step 900 loss 2.0\nGCP Metadata Service says termination is imminent\n"
            "Traceback (most recent call last):\nKeyboardInterrupt\n",
            "preempted",
        ),
        ('{"Events": [{"EventType": "Preempt", "ResourceType": "VirtualMachine"}]}\nKilled\n', "preempted"),
        ("salloc: Job allocation 608 has been revoked.\n", "preempted"),
    ],
)
def test_real_failure_evidence_the_issue_names(text: str, reason: str) -> None:
    result = classify_text(text, SIGNATURES)
    assert result.reason == reason, "\n".join(result.explain())


def _steps(first: int, n: int) -> str:
    return "".join(f"iter {i}: loss 3.2{i % 10}, time 500.00ms\n" for i in range(first, first + n))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # a JIT compile fails, the run falls back and trains on for three steps: it survived
        ("x.h:3:12: fatal error: y.h: No such file or directory\ncompilation terminated.\n" + _steps(1, 3), "none"),
        # two steps are not enough to say so
        ("x.h:3:12: fatal error: y.h: No such file or directory\n" + _steps(1, 2), "file_not_found"),
        # steps, then the failure: it ended the run
        (_steps(1, 5) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "cuda_oom"),
        # one rank fails, the others print steps, then the failure that follows from it
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            + _steps(1, 4)
            + "RuntimeError: NCCL communicator was aborted on rank 0.\n",
            "cuda_oom",
        ),
    ],
)
def test_a_run_that_trained_on_after_its_failure_evidence_survived_it(tmp_path: Path, text: str, reason: str) -> None:
    log = tmp_path / "job.log"
    log.write_text(text)
    result = classify_file(log, SIGNATURES)
    assert result.reason == reason, "\n".join(result.explain())
    assert classify_text(text, SIGNATURES).reason == reason
    if reason == "none":
        assert any("trained on" in line for line in result.explain())
