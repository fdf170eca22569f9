"""No pattern that meets a line from the wild backtracks without bound (issue #26, part 1).

Reproduction (before): a printed line that hangs the classifier and the ingest,

    python3 -c "print('(a'+'=aa'*40+' failed')" > /tmp/x.out; timeout 60 gca classify /tmp/x.out   # exit 124

(logline.py's Ray-tag prefix `\\((?:[\\w.-]+ )?(?:\\w+=[^\\s,()]+,? ?)+\\) ?` is exponential: 71
characters took 24 s), `xid` + 64k digits (the host prefix `[a-z][\\w-]*\\d+...`: 67 s), the speed
patterns `keras_time_per_step` (an 8 KB line: 1 s) and `lightning_rich_bar` (2,000 spaces then `•`:
6.6 s), and a site's own `--signatures` pattern, which could hang it the same way.

Every pattern gca's code compiles (found in its modules and their source) and every data pattern
(signatures, evidence, speed patterns) is fed lines built from its own parts to backtrack
(tests/hostile.py), each within LIMIT_S. Python's `re` checks for signals while it matches, so
an interval timer stops a runaway match and the test names the pattern and the line.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import gpucluster_analysis
from gpucluster_analysis.classify import classify_bytes, load_signatures
from gpucluster_analysis.classify.rules import expand, parse_signatures
from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import RulesError
from gpucluster_analysis.logline import normalize_line
from gpucluster_analysis.speed.extract import extract_speed_bytes
from gpucluster_analysis.speed.patterns import load_patterns, parse_patterns
from gpucluster_analysis.speed.reading import line_values
from gpucluster_analysis.textmatch import PIECE_CHARS
from tests.hostile import Pump, hostile_lines, hostile_pumps
from tests.marks import keep_by_default

LIMIT_S = 1.0  # the issue's bound for one line
SHORT, LONG = 12_500, 50_000  # every line at SHORT characters; the slowest shapes again at LONG
LINES_PER_PATTERN = 60
SLOWEST = 5
# From SHORT to LONG a linear pattern takes ~4x as long (up to ~8x where the longer line leaves the
# CPU's caches), a quadratic one ~16x.
GROWTH = 11
FLOOR_S = 0.05  # below this at LONG, a pattern is fast enough whatever its growth (and timing is noise)
# Modules whose patterns never see input from a user's files: the generator's, the Spark translator's
# and the reader of gca's own SQL files.
_OWN_TEXT = ("gpucluster_analysis.synth", "gpucluster_analysis.spark", "gpucluster_analysis.sqlfiles")
_ANCHORED = {"match", "fullmatch"}


class _TooSlow(Exception):
    pass


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise _TooSlow in the main thread after `seconds` of this process's CPU time (the matcher
    checks for signals). CPU time, not the clock's: on a busy machine the clock also counts the
    time other processes had the cores."""

    def stop(*_: object) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _seconds(run: Callable[[Any], object], line: str, encode: bool, limit: float = 3 * LIMIT_S) -> float:
    """The CPU time `run` takes on `line` (timed again when over a millisecond, the better kept:
    caches and the scheduler still vary), failing the test when it does not end within `limit`
    seconds of CPU."""
    arg = line.encode("utf-8") if encode else line
    best = float("inf")
    for _ in range(2):
        started = time.thread_time()
        try:
            with _deadline(limit):
                run(arg)
        except _TooSlow:
            pytest.fail(f"still matching after {limit:.2f} s: {line[:80]!r}... ({len(line):,} characters)")
        best = min(best, time.thread_time() - started)
        if best < 1e-3:
            break
    return best


def _check_linear(
    key: str,
    run: Callable[[Any], object],
    pumps: list[Pump],
    encode: bool = False,
    short: int = SHORT,
    long: int = LONG,
) -> None:
    """Every hostile line within LIMIT_S at `long` characters, and none slower than linear: each
    shape at `short` characters (4x shorter) within LIMIT_S / 4, then the SLOWEST shapes again at
    `long`, where one over FLOOR_S must take less than GROWTH times its time at `short`."""
    timed = []
    for pump in pumps:
        took = _seconds(run, pump.at(short), encode, limit=LIMIT_S / 2)
        assert took < LIMIT_S / 4, f"{key} took {took:.2f} s on {pump.at(short)[:60]!r}... ({short:,} characters)"
        timed.append((took, pump))
    timed.sort(key=lambda t: -t[0])
    for short_s, pump in timed[:SLOWEST]:
        line = pump.at(long)
        long_s = _seconds(run, line, encode)
        shown = f"{line[:60]!r}... ({len(line):,} characters)"
        assert long_s < LIMIT_S, f"{key} took {long_s:.2f} s on {shown}"
        for _ in range(3):  # timed again, both, in turn: the machine is shared, and a pause is not growth
            if long_s < FLOOR_S or long_s < GROWTH * short_s:
                break
            short_s = min(short_s, _seconds(run, pump.at(short), encode))
            long_s = min(long_s, _seconds(run, line, encode))
        assert long_s < FLOOR_S or long_s < GROWTH * max(short_s, 1e-4), (
            f"{key} grows faster than the line: {short_s * 1000:.1f} ms at {short:,} characters,"
            f" {long_s * 1000:.1f} ms at {long:,}: {shown}"
        )


def _code_patterns() -> dict[str, tuple[re.Pattern[Any], str]]:
    """Every pattern gca's modules compile -> (pattern, how it is used: `match` when the module only
    anchors it, else `search`): module-level ones from the modules themselves, the ones written in a
    call (`re.sub(r"...", ...)`) from their source."""
    found: dict[str, tuple[re.Pattern[Any], str]] = {}
    seen: set[int] = set()
    for info in sorted(
        pkgutil.walk_packages(gpucluster_analysis.__path__, "gpucluster_analysis."), key=lambda i: i.name
    ):
        if info.name.startswith(_OWN_TEXT):
            continue
        module = importlib.import_module(info.name)
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        uses: dict[str, set[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                uses.setdefault(node.value.id, set()).add(node.attr)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr != "compile"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, (str, bytes))
            ):
                flags = (
                    re.IGNORECASE
                    if any(
                        isinstance(k.value, ast.Attribute) and k.value.attr in ("I", "IGNORECASE")
                        for k in node.keywords
                    )
                    else 0
                )
                pattern = re.compile(node.args[0].value, flags)
                found[f"{info.name}:{node.lineno}"] = (pattern, "match" if node.func.attr in _ANCHORED else "search")
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and id(value) not in seen:
                seen.add(id(value))
                methods = uses.get(name, set()) & {
                    "match",
                    "fullmatch",
                    "search",
                    "finditer",
                    "findall",
                    "sub",
                    "subn",
                    "split",
                }
                found[f"{info.name}.{name}"] = (value, "match" if methods and methods <= _ANCHORED else "search")
    return found


CODE_PATTERNS = _code_patterns()


def test_the_collection_finds_the_patterns_that_hung() -> None:
    """The patterns of the issue's reproductions are among those checked (a collection that found
    nothing would make the check below pass on nothing)."""
    assert len(CODE_PATTERNS) > 80
    for key in (
        "gpucluster_analysis.logline._PREFIX",
        "gpucluster_analysis.ingest.gpu.dcgm._FAST",
        "gpucluster_analysis.ingest.slurm.scontrol._KEY_VALUE",
        "gpucluster_analysis.ingest.slurm.nodes._FIELD",
    ):
        assert key in CODE_PATTERNS


@pytest.mark.parametrize("key", sorted(CODE_PATTERNS))
def test_code_pattern_is_linear_on_hostile_lines(key: str) -> None:
    pattern, how = CODE_PATTERNS[key]
    run = pattern.match if how == "match" else pattern.search
    _check_linear(
        f"{key} ({how})",
        run,
        hostile_pumps(pattern, limit=LINES_PER_PATTERN),
        encode=isinstance(pattern.pattern, bytes),
    )


@pytest.mark.parametrize(
    "planted",
    keep_by_default(
        [
            r"[a-z][\w-]*\d+(?:\.[\w.-]+)?: +",  # the host prefix as it was: quadratic
            r"(\[[^\]]*\])",  # hostlist's bracket split as it was: quadratic under search (9 s)
            r"\s+\d",  # a plain repetition under search: quadratic in a run of blanks
            r".*x.*y",  # cubic under search
        ],
        {r"[a-z][\w-]*\d+(?:\.[\w.-]+)?: +", r"\s+\d", r".*x.*y"},
    ),
)
def test_the_check_fails_a_pattern_that_backtracks(planted: str) -> None:
    """Planted: patterns slower than linear fail the check (the issue's host prefix among them)."""
    pattern = re.compile(planted)
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        _check_linear(planted, pattern.search, hostile_pumps(pattern, limit=30))


def test_the_generator_builds_the_line_that_hung() -> None:
    """The Ray-tag prefix as it was (exponential): one of its hostile lines of 64 characters already
    takes long (the issue's 71 took 24 s)."""
    ray = re.compile(r"\((?:[\w.-]+ )?(?:\w+=[^\s,()]+,? ?)+\) ?")
    for line in hostile_lines(ray, length=64):
        started = time.thread_time()
        try:
            with _deadline(LIMIT_S):
                ray.match(line)
        except _TooSlow:
            pass
        if time.thread_time() - started > 0.2:
            return
    pytest.fail("no hostile line made the exponential pattern slow")


def _signature_patterns() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sig in load_signatures():
        out[sig.id] = (expand(sig.pattern), sig.regex.occurs_in_text)
        if sig.unless_regex is not None:
            out[f"{sig.id} unless"] = (expand(sig.unless), sig.unless_regex.occurs_in_text)
    return out


SIGNATURE_PATTERNS = _signature_patterns()
SPEED_PATTERNS = {p.id: p for p in load_patterns()}


@pytest.mark.parametrize("key", sorted(SIGNATURE_PATTERNS))
def test_signature_pattern_is_linear_on_hostile_lines(key: str) -> None:
    """Also each of the first shapes at a megabyte: RE2 takes milliseconds there."""
    text, run = SIGNATURE_PATTERNS[key]
    pumps = hostile_pumps(text, limit=30)
    _check_linear(key, run, pumps)
    for pump in pumps[:3]:
        assert _seconds(run, pump.at(1 << 20), encode=False) < LIMIT_S, f"{key}: {pump}"


@pytest.mark.parametrize("key", sorted(SPEED_PATTERNS))
def test_speed_pattern_is_linear_on_hostile_lines(key: str) -> None:
    """A speed pattern (Python's re) sees a piece of a line up to PIECE_CHARS characters: its
    regex (and `unless`) linear on hostile pieces up to that length."""
    pattern = SPEED_PATTERNS[key]
    run = pattern.regex.match if pattern.kind == "bar" else (lambda s: list(pattern.regex.finditer(s)))
    pumps = hostile_pumps(pattern.regex_text, limit=30)
    _check_linear(key, run, pumps, short=PIECE_CHARS // 4, long=PIECE_CHARS)
    if pattern.unless is not None:
        _check_linear(
            f"{key} unless",
            pattern.unless.search,
            hostile_pumps(pattern.unless_text, limit=20),
            short=PIECE_CHARS // 4,
            long=PIECE_CHARS,
        )


# The reading of a megabyte line is the same code for every pattern of a kind (its pieces are
# PIECE_CHARS long whatever the pattern): one pattern of each kind by default, all when slow run.
@pytest.mark.parametrize(
    "key",
    keep_by_default(sorted(SPEED_PATTERNS), {"tqdm_bar", "keras_time_per_step", "hf_train_samples_per_second"}),
)
def test_speed_reading_of_a_megabyte_line_is_bounded(key: str) -> None:
    """The reading of a megabyte line, one piece or pieces of PIECE_CHARS split by \\r, within
    LIMIT_S, on the first hostile shapes of the pattern."""
    pattern = SPEED_PATTERNS[key]
    for pump in hostile_pumps(pattern.regex_text, limit=30)[:4]:
        piece = pump.at(PIECE_CHARS - 1)
        for line in (pump.at(1 << 20), "\r".join([piece] * ((1 << 20) // PIECE_CHARS))):
            assert _seconds(lambda s: line_values(pattern, s), line, encode=False) < LIMIT_S, f"{key}: {pump}"


ISSUE_LINES = {
    "ray tag": "(a" + "=aa" * 40 + " failed",
    "ray tag, long": "(a" + "=aa" * 20_000 + " failed",
    "xid digits": "xid" + "1" * 64_000,
    "keras 8 KB": "1/100 " + "7" * 8_000 + " ms/ste",
    "keras fractions": "1/1 " * 3_000 + "5s/stepx",
    "torchtitan steps": "step: 1 " * 3_000 + "tflops:x",
    "rich bar spaces": " " * 2_000 + "•",
    "rich bar spaces, long": "Epoch 1" + " " * 200_000 + "• 1/2",
    "megabyte of prefixes": "[rank0]: " * 120_000,
    "megabyte of one word": "node" + "0" * 1_000_000 + ": x",
    "osc without end": "\x1b]" * 300_000,
}


@pytest.mark.parametrize("name", sorted(ISSUE_LINES))
def test_the_issues_lines_classify_and_read_in_bounded_time(name: str) -> None:
    """Each reproduction of the issue, through the code that reads logs: the noise stripped, the
    signatures tried, the speed patterns read; also at a megabyte."""
    line = ISSUE_LINES[name]
    signatures = load_signatures()
    log = ("Traceback (most recent call last):\n" + line + "\nRuntimeError: error " + line + "\n").encode()
    for run in (normalize_line, lambda text: classify_bytes(log, signatures), lambda text: extract_speed_bytes(log)):
        assert _seconds(run, line, encode=False) < LIMIT_S, name


def test_a_site_pattern_that_could_backtrack_is_refused_when_loaded(tmp_path: Path) -> None:
    """A site's signature with a lookahead or a backreference cannot run under RE2: refused with the
    file, the signature and what to write instead, before anything is read; one with catastrophic
    nesting (`(a+)+`) runs, in linear time."""
    lookahead = """[[signature]]
id = "site_disk"
reason = "disk_full"
pattern = 'quota(?! warning) exceeded'
priority = 700
examples = ["quota exceeded"]
"""
    with pytest.raises(RulesError) as err:
        parse_signatures(lookahead, "site.toml")
    assert "site.toml: signature 'site_disk': pattern uses a negative lookahead" in str(err.value)
    assert "unless" in str(err.value)
    nested = lookahead.replace("quota(?! warning) exceeded", "(?:x+x+)+y").replace('["quota exceeded"]', '["xxy"]')
    (sig,) = parse_signatures(nested, "site.toml")
    assert _seconds(sig.regex.occurs_in_text, "x" * 100_000, encode=False) < LIMIT_S
    path = tmp_path / "site.toml"
    path.write_text(lookahead, encoding="utf-8")
    log = tmp_path / "job.out"
    log.write_text("quota exceeded\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["classify", str(log), "--signatures", str(path)])
    assert result.exit_code == 2
    assert "negative lookahead" in result.output and len(result.output.strip().splitlines()) == 1


def test_unless_takes_the_place_of_a_lookahead() -> None:
    """`unless` vetoes a line the pattern matches; lines it does not match are unaffected."""
    text = """[[signature]]
id = "site_disk"
reason = "disk_full"
pattern = 'quota exceeded'
unless = '(?i)warning'
priority = 700
examples = ["quota exceeded"]
counter_examples = ["WARNING: quota exceeded soon"]
"""
    (sig,) = parse_signatures(text, "site.toml")
    assert sig.matches("disk quota exceeded") and not sig.matches("warning: quota exceeded")
    assert not sig.matches("warning: all good")


def test_speed_unless_skips_a_validation_bar() -> None:
    """The tqdm bar's `unless` (formerly a lookahead) keeps validation bars out and training bars in."""
    (tqdm,) = [p for p in load_patterns() if p.id == "tqdm_bar"]
    train = "Epoch 1: 100%|##########| 50/50 [00:10<00:00,  5.00it/s]"
    assert line_values(tqdm, train) == [5.0]
    assert line_values(tqdm, "Validation: 100%|##########| 50/50 [00:10<00:00,  5.00it/s]") == []


def test_a_broken_speed_regex_is_refused() -> None:
    text = """[[pattern]]
id = "x"
framework = "f"
metric = "samples_per_s"
unit = "samples/s"
convert = "as_is"
per_gpu = false
kind = "step"
priority = 200
regex = '(rate=(?P<value>\\d+)'
prefilter = ["rate="]
[[pattern.example]]
line = "rate=5"
value = 5
source = "https://example.org"
"""
    with pytest.raises(RulesError, match="speed.toml: pattern 'x': regex does not compile"):
        parse_patterns(text, "speed.toml")


def test_the_direct_matcher_agrees_with_re2s_own_search() -> None:
    """LinearPattern asks RE2's matcher on bytes; on every signature's examples and counter-examples,
    non-ASCII lines among them, it says what google-re2's public search says."""
    import re2

    lines = ["已杀死", "Убито", "RuntimeError: CUDA out of memory. é", "", "x" * 10_000 + "Killed"]
    for sig in load_signatures():
        lines += [*sig.examples, *sig.counter_examples]
    for sig in load_signatures():
        public = re2.compile(expand(sig.pattern))
        for line in lines:
            assert sig.regex.occurs_in_text(line) == (public.search(line) is not None), (sig.id, line)


def test_the_matcher_falls_back_to_the_public_search() -> None:
    """A google-re2 without the matcher LinearPattern asks directly: its public search answers."""
    import types

    import re2

    from gpucluster_analysis.textmatch import LinearPattern

    only_public = types.SimpleNamespace(search=re2.compile("quota (?:exceeded|full)").search)
    pattern = LinearPattern("quota (?:exceeded|full)", only_public)
    assert pattern.occurs_in(b"disk quota exceeded") and not pattern.occurs_in(b"quota ok")
