"""Training speed from job logs: every pattern example, whole logs, the statistics by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpucluster_analysis.classify.engine import HEAD_BYTES, TAIL_BYTES
from gpucluster_analysis.errors import RulesError
from gpucluster_analysis.speed import (
    METRICS,
    SpeedSample,
    extract_speed,
    extract_speed_bytes,
    load_patterns,
    read_speed,
    summarize,
    warmup_count,
)
from gpucluster_analysis.speed.patterns import parse_patterns, shipped_path
from gpucluster_analysis.speed.reading import line_values
from tests.conftest import REPO

PATTERNS = load_patterns()
BY_ID = {p.id: p for p in PATTERNS}
SOURCES = REPO / "tests" / "data" / "speed" / "SOURCES.md"


def _cases(kind: str) -> list[object]:
    return [
        pytest.param(p.id, ex.line, ex.value, id=f"{p.id}-{i}")
        for p in PATTERNS
        for i, ex in enumerate(getattr(p, kind), 1)
    ]


# --- patterns.toml -----------------------------------------------------------


@pytest.mark.parametrize(("pid", "line", "value"), _cases("examples"))
def test_pattern_gives_its_example_value(pid: str, line: str, value: float) -> None:
    assert line_values(BY_ID[pid], line) == [pytest.approx(value, rel=1e-6)]
    assert any(lit in line.lower() for lit in BY_ID[pid].prefilter)


@pytest.mark.parametrize(("pid", "line", "value"), _cases("counter_examples"))
def test_pattern_gives_nothing_for_its_counter_example(pid: str, line: str, value: None) -> None:
    assert line_values(BY_ID[pid], line) == []


def test_every_example_line_alone_is_read_by_the_whole_extractor() -> None:
    """A log of an example (one line, or as many as the pattern needs) gives samples of that
    pattern (the prefilter trigger does not hide it), and the winner is at least as high in priority.
    A generic key is tried among the generic keys: the others go first, and read only where they
    read nothing."""
    for p in PATTERNS:
        among = tuple(q for q in PATTERNS if q.fallback == p.fallback)
        for ex in p.examples:
            got = extract_speed("\n".join([ex.line] * p.min_samples), among)
            assert got is not None, (p.id, ex.line)
            assert p.id in {c[0] for c in got.candidates}, (p.id, got.candidates)
            assert BY_ID[got.pattern_id].priority >= p.priority


def test_patterns_cover_the_named_frameworks_and_are_sourced() -> None:
    frameworks = {p.framework for p in PATTERNS}
    assert {"tqdm", "huggingface", "lightning", "megatron", "deepspeed", "keras", "nanogpt", "torchtitan"} <= frameworks
    assert {p.metric for p in PATTERNS} == set(METRICS)
    sources = SOURCES.read_text() + (SOURCES.parent / "wild" / "SOURCES.md").read_text()
    for p in PATTERNS:
        for ex in p.examples + p.counter_examples:
            assert ex.source in sources, (p.id, ex.source)


def test_priority_bands_order_the_metrics() -> None:
    band = {m: b for m, (_, b) in METRICS.items()}
    assert sorted(METRICS, key=lambda m: -band[m]) == [
        "tflops_per_gpu",
        "tokens_per_s",
        "samples_per_s",
        "iterations_per_s",
    ]
    assert all(p.priority // 100 == band[p.metric] for p in PATTERNS)
    assert len({p.priority for p in PATTERNS}) == len(PATTERNS)  # no ties to break by file order


def _one(extra: str, **replace: str) -> str:
    base = {
        "id": "'x_speed'",
        "framework": "'x'",
        "metric": "'samples_per_s'",
        "unit": "'samples/s'",
        "convert": "'as_is'",
        "per_gpu": "false",
        "kind": "'step'",
        "priority": "200",
        "regex": r"'rate=(?P<value>\d+)'",
        "prefilter": "['rate=']",
    }
    base.update(replace)
    body = "\n".join(f"{k} = {v}" for k, v in base.items() if v)
    return f"[[pattern]]\n{body}\n{extra}\n[[pattern.example]]\nline = 'rate=5'\nvalue = 5\nsource = 'here'\n"


def test_loader_accepts_a_minimal_pattern() -> None:
    (p,) = parse_patterns(_one(""), "t.toml")
    assert p.id == "x_speed" and line_values(p, "rate=5") == [5.0]


@pytest.mark.parametrize(
    ("extra", "replace", "message"),
    [
        ("colour = 'red'", {}, "unknown key"),
        ("", {"priority": "150"}, "outside the samples_per_s band"),
        ("", {"metric": "'furlongs'"}, "unknown metric"),
        ("", {"regex": r"'rate=(\d+)'"}, "no (?P<value>"),
        ("", {"regex": r"'rate=(?P<value>\d+'"}, "does not compile"),
        ("", {"prefilter": "['speed=']"}, "prefilter"),
        ("", {"convert": "'squared'"}, "convert must be"),
        ("", {"kind": "'bar'"}, "desc, total and elapsed"),
        ("[[pattern.counter_example]]\nline = 'rate=7'\nsource = 'here'", {}, "counter-example 1 gives [7.0]"),
    ],
)
def test_loader_rejects_bad_patterns(extra: str, replace: dict[str, str], message: str) -> None:
    with pytest.raises(RulesError, match=r"t\.toml: pattern 'x_speed'") as err:
        parse_patterns(_one(extra, **replace), "t.toml")
    assert message in str(err.value)


def test_loader_rejects_a_wrong_expected_value_and_duplicates() -> None:
    with pytest.raises(RulesError, match="example 1 gives"):
        parse_patterns(_one("").replace("value = 5", "value = 6"), "t.toml")
    with pytest.raises(RulesError, match="duplicate id"):
        parse_patterns(_one("") + _one(""), "t.toml")


def test_shipped_file_is_package_data() -> None:
    assert shipped_path().name == "patterns.toml" and shipped_path().exists()


# --- statistics, worked out by hand ---------------------------------------------


def test_warmup_median_iqr_mad_by_hand() -> None:
    # 10 samples: drop ceil(10%) = 1 (the 1.0); the rest [2, 10, 11, 12, 10, 9, 11, 10, 12] has
    # median 10, so the 2 (< 5) is a slow start too. Kept: [10, 11, 12, 10, 9, 11, 10, 12],
    # sorted [9, 10, 10, 10, 11, 11, 12, 12]: median 10.5; quartiles at positions 1.75 and
    # 5.25 of 0..7: p25 = 10 + 0.75 * 0 = 10, p75 = 11 + 0.25 * (12 - 11) = 11.25, IQR 1.25;
    # |x - 10.5| = [.5, .5, 1.5, .5, 1.5, .5, .5, 1.5]: MAD 0.5.
    values = [1, 2, 10, 11, 12, 10, 9, 11, 10, 12]
    assert warmup_count(values) == 2
    s = summarize(
        BY_ID["deepspeed_samples_per_sec"], [SpeedSample(i + 1, v, v, "samples/s") for i, v in enumerate(values)]
    )
    assert (s.median, s.p25, s.p75, s.iqr, s.mad) == (10.5, 10, 11.25, 1.25, 0.5)
    assert (s.samples_seen, s.samples_used, s.warmup_dropped) == (10, 8, 2)
    assert [x.value for x in s.steady] == values[2:]


def test_warmup_rule_edges() -> None:
    assert warmup_count([5.0]) == 0 and warmup_count([1.0, 5.0]) == 0  # too few to tell
    assert warmup_count([1.0, 5.0, 5.0]) == 1
    assert warmup_count([5.0] * 11) == 2  # ceil(11 / 10)
    assert warmup_count([1.0] * 9 + [100.0]) == 1  # a fast last sample does not drop the run
    assert warmup_count([0.1, 0.1, 0.1, 4, 4, 4, 4, 4, 4, 4]) == 3


def test_a_run_average_keeps_its_only_samples() -> None:
    s = summarize(BY_ID["hf_train_samples_per_second"], [SpeedSample(1, 3.0, 3.0, "samples/s")] * 4)
    assert (s.warmup_dropped, s.samples_used, s.median, s.iqr) == (0, 4, 3.0, 0.0)


# --- whole logs -------------------------------------------------------------------


def _bar(n: int, total: int, seconds: int, rate: float, desc: str = "") -> str:
    pct = 100 * n // total
    filled = "█" * (pct // 10)
    return f"{desc}{pct:3d}%|{filled:10s}| {n}/{total} [{seconds // 60:02d}:{seconds % 60:02d}<00:00, {rate:.2f}it/s]"


# Last bar state on each logging line; the first is slow (compilation, data warm-up).
HF_RATES = [0.5, 1.9, 2.0, 2.1, 2.0, 2.2, 1.9, 2.0, 2.1, 2.0]


def _hf_training(rates: list[float] = HF_RATES) -> list[str]:
    lines = [
        "***** Running training *****",
        "  Num examples = 8000",
        "  Total optimization steps = 1000",
        "  0%|          | 0/1000 [00:00<?, ?it/s]",
    ]
    for k, rate in enumerate(rates, 1):
        # each logging step: the bar redrawn a few times with \r, then the step dict glued to it
        states = [_bar(100 * k - 20 + j * 10, 1000, 50 * k - 10 + j * 5, rate * (0.9 + 0.05 * j)) for j in range(2)]
        states.append(_bar(100 * k, 1000, 50 * k, rate))
        lines.append(
            "\r".join(states) + f"{{'loss': {3.0 - 0.1 * k:.4f}, 'learning_rate': 5e-05, 'epoch': {k / 10:.2f}}}"
        )
    return lines


def test_hf_trainer_log_killed_before_the_end_reads_its_bar_with_warmup() -> None:
    s = extract_speed("\n".join(_hf_training()))
    assert s is not None and (s.pattern_id, s.metric, s.unit) == ("tqdm_bar", "iterations_per_s", "it/s")
    assert [x.value for x in s.samples] == HF_RATES  # the last state of each line, not the \r redraws
    assert [x.line_number for x in s.samples] == list(range(5, 15))
    # drop ceil(10%) = the 0.5; the rest (median 2.0, half 1.0) has no slow start. Kept sorted:
    # [1.9, 1.9, 2.0, 2.0, 2.0, 2.0, 2.1, 2.1, 2.2]: median 2.0, p25 = x[2] = 2.0, p75 = x[6] = 2.1,
    # |x - 2| sorted [0, 0, 0, 0, .1, .1, .1, .1, .2]: MAD 0.1
    assert (s.warmup_dropped, s.samples_used) == (1, 9)
    assert s.median == 2.0 and s.p25 == 2.0 and s.p75 == pytest.approx(2.1) and s.iqr == pytest.approx(0.1)
    assert s.mad == pytest.approx(0.1)


def test_hf_trainer_full_log_prefers_train_samples_per_second() -> None:
    end = [
        "{'train_runtime': 500.1, 'train_samples_per_second': 15.997, 'train_steps_per_second': 2.0, "
        "'train_loss': 2.4, 'epoch': 1.0}",
        _bar(1000, 1000, 500, 2.0),
        "***** train metrics *****",
        "  epoch                    =        1.0",
        "  train_runtime            = 0:08:20.10",
        "  train_samples_per_second =     15.997",
    ]
    s = extract_speed("\n".join(_hf_training() + end))
    assert s is not None and (s.pattern_id, s.metric, s.kind) == (
        "hf_train_samples_per_second",
        "samples_per_s",
        "run_average",
    )
    assert (s.median, s.samples_seen, s.warmup_dropped) == (15.997, 2, 0)
    assert s.candidates == (("hf_train_samples_per_second", "samples_per_s", 2), ("tqdm_bar", "iterations_per_s", 11))


def test_tqdm_log_with_eval_and_data_bars_keeps_the_training_family() -> None:
    lines = [
        "Map: 100%|██████████| 50000/50000 [00:03<00:00, 14285.71 examples/s]",  # other unit
        "Running tokenizer on dataset: 100%|██████████| 50/50 [00:20<00:00,  2.45it/s]",  # named
        _bar(50000, 50000, 12, 4166.67),  # an unnamed preprocessing loop: a family of its own
    ]
    train_rates = []
    for k in range(1, 7):
        rate = 3.0 + 0.1 * (k % 3)
        train_rates.append(rate)
        train = _bar(150 * k, 1000, 60 * k, rate)
        evals = "\r".join(
            [_bar(0, 63, 0, 1.0).replace("1.00it/s", "?it/s"), _bar(32, 63, 2, 12.0), _bar(63, 63, 5, 11.2)]
        )
        # HF draws the eval bar on the training bar's line; the training bar is redrawn after it
        lines.append(
            f"{train}\r{evals}\r{train}{{'eval_loss': 1.2, 'eval_samples_per_second': 100.0, 'epoch': {k / 6:.2f}}}"
        )
        lines.append(_bar(63, 63, 5, 11.5))  # and once on a line of its own
    s = extract_speed("\n".join(lines))
    assert s is not None and s.pattern_id == "tqdm_bar"
    assert [x.value for x in s.samples] == train_rates
    assert [x.line_number for x in s.samples] == [4, 6, 8, 10, 12, 14]


def test_megatron_log_by_hand() -> None:
    rows = [(9500.0, 16.0), (1100.0, 138.0), (1000.0, 151.9), (1000.0, 152.0), (1020.0, 149.0), (990.0, 153.5)]
    text = "\n".join(
        f" [2024-04-06 03:02:{i:02d}] iteration {i:8d}/     100 | consumed samples: {128 * i:12d} | "
        f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tf:.1f} | "
        f"learning rate: 1.420000E-05 | global batch size:   128 | lm loss: 1.818812E+00 | loss scale: 1.0 |"
        for i, (ms, tf) in enumerate(rows, 1)
    )
    s = extract_speed("building GPT model ...\n" + text + "\n[after training is done] datetime: 2024-04-06 03:05:00")
    assert s is not None and (s.pattern_id, s.metric, s.unit, s.per_gpu) == (
        "megatron_tflops_per_gpu",
        "tflops_per_gpu",
        "TFLOP/s/GPU",
        True,
    )
    # drop the 16.0 (first 10%); kept sorted [138, 149, 151.9, 152, 153.5]: median 151.9,
    # p25 = x[1] = 149, p75 = x[3] = 152; |x - 151.9| sorted [0, .1, 1.6, 2.9, 13.9]: MAD 1.6
    assert (s.warmup_dropped, s.median, s.p25, s.p75) == (1, 151.9, 149.0, 152.0)
    assert s.iqr == pytest.approx(3.0) and s.mad == pytest.approx(1.6)
    assert [x.line_number for x in s.samples] == [2, 3, 4, 5, 6, 7]
    assert s.candidates[1] == ("megatron_ms_per_iteration", "iterations_per_s", 6)


def test_a_log_with_samples_per_second_and_tflops_reports_tflops() -> None:
    lines = []
    for i in range(1, 5):
        lines.append(
            f"[2024-03-07 15:27:{i:02d},188] [INFO] [timer.py:260:stop] epoch=0/micro_step={i}/global_step={i}, "
            f"RunningAvgSamplesPerSec=53.1, CurrSamplesPerSec={53 + i}.5, MemAllocated=20.1GB, MaxMemAllocated=30.2GB"
        )
        lines.append(
            f" iteration {i:8d}/    1000 | consumed samples: {768 * i:12d} | elapsed time per iteration "
            "(ms): 14287.5 | "
            f"samples per second: 53.753 | tokens per gpu per second (tgs): 1146.733 | TFLOPs: {69 + i}.85 |"
        )
    s = extract_speed("\n".join(lines))
    assert s is not None and (s.pattern_id, s.metric) == ("megatron_deepspeed_tflops", "tflops_per_gpu")
    # the generic keys, which read these lines too, are no candidates where the frameworks' own read
    assert [c[0] for c in s.candidates] == [
        "megatron_deepspeed_tflops",
        "megatron_deepspeed_tgs",
        "deepspeed_samples_per_sec",
        "megatron_deepspeed_samples_per_second",
        "megatron_ms_per_iteration",
    ]
    assert [x.value for x in s.samples] == [70.85, 71.85, 72.85, 73.85]
    only_samples = extract_speed("\n".join(lines[0::2]))
    assert only_samples is not None and only_samples.pattern_id == "deepspeed_samples_per_sec"
    assert [x.value for x in only_samples.samples] == [
        54.5,
        55.5,
        56.5,
        57.5,
    ]  # CurrSamplesPerSec, not the running average


def test_a_log_without_speed_gives_none() -> None:
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "train.py", line 12, in <module>',
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
            "Downloading: 100%|██████████| 440M/440M [00:05<00:00, 85.1MB/s]",
            "Validation DataLoader 0: 100%|██████████| 50/50 [00:02<00:00, 20.1it/s]",
            "{'loss': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}",
            "step 250: train loss 1.5440, val loss 1.7220",
        ]
    )
    assert extract_speed(text) is None
    assert extract_speed("") is None


def test_lightning_bars_with_rank_prefixes_and_carriage_returns() -> None:
    def epoch(prefix: str, e: int, rates: list[float]) -> str:
        states = [
            f"Epoch {e}:  {25 * (j + 1)}%|{'██' * (j + 1):10s}| {25 * (j + 1)}/100 [00:{10 * (j + 1):02d}<00:30, "
            f"{r:.2f}it/s, loss=0.5{j}, v_num=3]"
            for j, r in enumerate(rates)
        ]
        return prefix + "\r".join(states)

    lines = []
    for e in range(4):
        lines.append(epoch("[rank0]: ", e, [1.0, 4.0, 4.1 + e / 10]))
        lines.append(epoch("0: ", e, [1.0, 3.9, 4.0 + e / 10]))
        lines.append("[rank0]: Validation DataLoader 0: 100%|██████████| 10/10 [00:01<00:00,  9.90it/s]")
    s = extract_speed("\n".join(lines))
    assert s is not None and (s.pattern_id, s.framework) == ("lightning_tqdm_bar", "lightning")
    # both ranks' bars are one family ("Epoch #:", 100); the last state of each line counts
    assert [x.value for x in s.samples] == pytest.approx([4.1, 4.0, 4.2, 4.1, 4.3, 4.2, 4.4, 4.3])
    assert [x.line_number for x in s.samples] == [1, 2, 4, 5, 7, 8, 10, 11]
    assert s.warmup_dropped == 1 and s.median == pytest.approx(4.2)


def test_syslog_carriage_returns_and_ansi_codes() -> None:
    line = (
        "[1,mpirank:0,algo-1]<stdout>:#015Epoch 1:  50% 1/2 [00:00<00:00, 35.14it/s, loss=2.29, v_num=0]"
        "#015\x1b[32mEpoch 1: 100% 2/2 [00:00<00:00, 30.00it/s, loss=2.29, v_num=0]\x1b[0m"
    )
    s = extract_speed(line)
    assert s is not None and [x.value for x in s.samples] == [30.0]


def test_nanogpt_log_is_read_as_its_time_per_iteration_never_its_mfu() -> None:
    """Issue #28: `mfu 15.34%` is a share of a peak the script assumed, no speed; the line's
    `time 1099.34ms` is (the first iteration's compile time is warm-up)."""
    text = "\n".join(
        ["iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%"]
        + [f"iter {10 * i}: loss 3.2, time 1099.34ms, mfu 16.{60 + i}%" for i in range(1, 6)]
    )
    s = extract_speed(text)
    assert s is not None and (s.pattern_id, s.metric, s.samples_seen) == ("nanogpt_ms_per_iter", "iterations_per_s", 6)
    assert s.median == 1000 / 1099.34 and s.warmup_dropped == 1
    assert all(c[1] != "mfu_pct" for c in s.candidates)


def test_keras_and_torchtitan_logs() -> None:
    keras = "\n".join(
        f"Epoch {e}/3\n423/423 [==============================] - 192s {ms}ms/step - loss: 1.8"
        for e, ms in [(1, 500), (2, 400), (3, 400)]
    )
    s = extract_speed(keras)
    assert s is not None and s.pattern_id == "keras_time_per_step" and [x.raw_unit for x in s.samples] == ["ms"] * 3
    assert s.median == 2.5 and s.warmup_dropped == 1
    titan = "\n".join(
        f"[rank0]:[titan] 2025-06-16 22:31:{i:02d},970 - root - INFO - step: {10 * i}  loss:  6.0  "
        f"memory: 49.66GiB(52.28%)  tps: 5,{800 + i}  tflops: 33{i}.00  mfu: 34.00%"
        for i in range(1, 4)
    )
    t = extract_speed(titan)
    assert t is not None and t.pattern_id == "torchtitan_tflops" and t.median == 332.5  # 331 is warm-up
    assert [c[0] for c in t.candidates] == ["torchtitan_tflops", "torchtitan_tps"]
    # without the framework's own patterns, the generic keys read the same: tflops first
    generic = extract_speed(titan, tuple(p for p in PATTERNS if p.fallback))
    assert generic is not None and (generic.pattern_id, generic.median) == ("key_tflops_per_gpu", 332.5)
    assert [c[0] for c in generic.candidates] == ["key_tflops_per_gpu", "key_tokens_per_second_per_gpu"]


def test_read_speed_cuts_big_files_like_the_classifier(tmp_path: Path) -> None:
    def it(i: int) -> bytes:
        return (
            f" iteration {i:8d}/ 1000 | elapsed time per iteration (ms): 1000.0 | "
            f"throughput per GPU (TFLOP/s/GPU): {100 + i % 5}.0 |\n"
        ).encode()

    head = b"".join(it(i) for i in range(1, 11))
    filler = b"NCCL INFO Channel 00/0 : 0[0] -> 1[0] via P2P/IPC\n" * ((HEAD_BYTES + TAIL_BYTES) // 50 + 1000)
    tail = b"".join(it(i) for i in range(11, 21))
    big = tmp_path / "big.log"
    big.write_bytes(head + filler + tail)
    s = read_speed(big)
    assert s is not None and s.truncated and s.bytes_read == HEAD_BYTES + TAIL_BYTES
    assert s.samples_seen == 20
    assert [x.line_number for x in s.samples[:10]] == list(range(1, 11))
    assert all(x.line_number is None for x in s.samples[10:])
    small = tmp_path / "small.log"
    small.write_bytes(head)
    whole = read_speed(small)
    assert whole is not None and not whole.truncated and whole.bytes_read == len(head) and whole.samples_seen == 10
    assert read_speed(tmp_path / "big.log") == s  # deterministic
    empty = tmp_path / "none.log"
    empty.write_text("nothing to see\n")
    assert read_speed(empty) is None


def test_bytes_and_text_agree_and_bad_utf8_is_survived() -> None:
    text = "\n".join(_hf_training())
    data = text.encode() + b"\n\xff\xfe garbage \xc3\n"
    a, b = extract_speed(text), extract_speed_bytes(data)
    assert a is not None and b is not None
    assert dataclasses.replace(a, candidates=()) == dataclasses.replace(b, candidates=())


GENERIC = tuple(p for p in PATTERNS if p.fallback)


@pytest.mark.parametrize(
    ("line", "want"),
    [
        # key: value, key=value, key value unit, JSON, value unit: (metric, canonical value)
        ("epoch: 3, iter_time: 0.250s, data_time: 0.010s", ("iterations_per_s", 4.0)),
        ("it 7 | step_time=125ms | loss=2.1", ("iterations_per_s", 8.0)),
        ("step 9 time 0.5 (0.6) loss 1.0", ("iterations_per_s", 2.0)),  # a running mean in brackets after it
        ('{"step": 4, "throughput": 250.0}', ("samples_per_s", 250.0)),
        ("step 5: 1,200 tokens/s, loss 3.0", ("tokens_per_s", 1200.0)),
        ("batch 4 | TFLOPS: 180.5 | loss 2.0", ("tflops_per_gpu", 180.5)),
        # never a speed: another phase's or the whole run's, a share, a clock, a data loader's time
        ("data_time: 0.25, reader_cost: 0.5 s", None),
        ("Total time: 0.25 s", None),
        ("eval_time: 0.25", None),
        ("mfu: 0.25%, throughput: 45%", None),
        ("eta: 0:25:00, time: 10:43:36", None),
        ("speed: 0.25 it/s", ("iterations_per_s", 0.25)),  # not samples (its key's), iterations (its unit's)
        ("Train loss 3 9.564240 Grad Norm 13.827114 4.00s/it", ("iterations_per_s", 0.25)),  # a rate outside a bar
        ("tokens_per_sec_per_gpu: 11.4K | lm_loss: 2.38", ("tokens_per_s", 11400.0)),  # in thousands
        ("results: time=1 minute and 42.6 seconds", None),  # a duration in words
        # a key in its namespace (W&B, TensorBoard names); another phase's or the loader's is not read
        ("Train throughput/samples_per_sec: 412.5", ("samples_per_s", 412.5)),
        ("INFO:tensorflow:global_step/sec: 0.84", ("iterations_per_s", 0.84)),
        ("eval/samples_per_second: 99.0", None),
        ("data/time: 0.5", None),
        # a printed unit is the value's, whatever follows it (a bracketed note)
        ("iter 2 | loss 1.6 | iter time: 500.00 ms (step)", ("iterations_per_s", 2.0)),
        # of one table's keys a line's first; a whole step's time before an iteration's
        ("iter_time=0.001, forward_time=0.005, train_time=0.250, time=2", ("iterations_per_s", 4.0)),
    ],
)
def test_generic_keys_read_what_loggers_share(line: str, want: tuple[str, float] | None) -> None:
    """Three such lines (a generic key needs three) read by the generic keys alone, worked out by hand."""
    got = extract_speed("\n".join([line] * 3), GENERIC)
    assert (None if got is None else (got.metric, got.median)) == want


def test_a_generic_key_needs_three_lines_and_yields_to_a_frameworks_own_pattern() -> None:
    assert extract_speed("time: 0.5\ntime: 0.5", GENERIC) is None
    lines = [f"iter {i}: loss 3.2, time 500.00ms" for i in range(1, 5)] + ["seconds: 0.25"] * 3
    s = extract_speed("\n".join(lines))
    assert s is not None and s.pattern_id == "nanogpt_ms_per_iter" and s.median == 2.0


def test_a_mean_since_the_start_is_read_as_one() -> None:
    """detectron2 prints the mean iteration time since training started: the last one is the
    run's (1 / 0.5 here, worked out by hand), and the unit says what it is."""
    lines = [
        f"[04/14 09:0{i}:02] d2.utils.events INFO:  eta: 0:11:54  iter: {20 * i - 1}  total_loss: 9.2  "
        f"time: {t}  data_time: 0.0220  lr: 0.001"
        for i, t in enumerate([0.9, 0.7, 0.6, 0.5], 1)
    ]
    s = extract_speed("\n".join(lines))
    assert s is not None and s.pattern_id == "detectron2_time"
    assert (s.median, s.unit, s.warmup_dropped, s.samples_seen) == (2.0, "it/s (mean since start)", 0, 4)


def test_a_clock_is_no_step_time_but_a_step_time_that_slows_down_is() -> None:
    """A time since the start rises evenly from line to line (modded-nanogpt's `train_time`): it
    is not read, and the step time beside it is; a step time that slows down unevenly is read
    (medians worked out by hand)."""
    clock = [f"step:{i} train_time:{100 * i}ms step_avg:{ms}ms" for i, ms in enumerate([100, 110, 90, 100, 105], 1)]
    s = extract_speed("\n".join(clock), GENERIC)
    # step_avg without its warm-up (the first): 110, 90, 100, 105 ms; the median of their rates
    assert s is not None and s.pattern_id == "key_time_per_iteration"
    assert s.median == pytest.approx((1000 / 105 + 1000 / 100) / 2)
    slowing = [f"iter: {i}, iter_time: {t}s, data_time: 0.2s" for i, t in enumerate([2.5, 3.9, 4.3, 4.7, 5.6])]
    s = extract_speed("\n".join(slowing), GENERIC)
    # 3.9, 4.3, 4.7, 5.6 s after the warm-up: the median of their rates
    assert s is not None and s.median == pytest.approx((1 / 4.3 + 1 / 4.7) / 2)


def test_a_bar_family_ignores_how_wide_its_columns_are() -> None:
    """YOLOv5 pads its columns to its numbers' width: one bar still, and the validation bar apart."""
    train = (
        "        {e}/2      4.76G    {l}    0.0647    0.01698        227        640: 100% 8/8 [00:0{s}<00:00,  {r}it/s]"
    )
    val = "      Class     Images  Instances      P      R   mAP50   mAP50-95: 100% 4/4 [00:01<00:00,  2.{v}it/s]"
    lines = [train.format(e=0, l="0.04618", s=9, r="1.20"), val.format(v=1)]
    lines += [train.format(e=1, l="0.0462", s=2, r="3.80"), val.format(v=2)]
    lines += [train.format(e=2, l="0.04", s=2, r="4.20"), val.format(v=3)]
    s = extract_speed("\n".join(lines))
    # the training bar: 1.2, 3.8, 4.2 it/s; the first is warm-up -> median of 3.8 and 4.2
    assert s is not None and s.pattern_id == "tqdm_bar" and s.median == pytest.approx(4.0)
