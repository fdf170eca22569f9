"""Classify a job log: find the lines worth looking at, strip their noise, match the
signatures and the failure evidence, pick the root cause, or say that there is none.

Outcome: a named reason when a signature counts; `unknown` when no signature counts but
failure evidence does (a traceback, a non-zero exit, a fatal signal); `none` when the log
shows no failure at all (a warning is not a cause). What does not count: anything before
the last `success` evidence (the run finished, or recovered: a resume, a batch size that
fits), anything the run trained on after (the speed reader reads three training steps in the
lines after the last failure evidence), the lines of a traceback that `handled` evidence marks
as caught (`Exception ignored in:`, multiprocessing finalizers), lines that are `note` evidence (NCCL falling back to
another transport, TensorRT libraries missing), and a signature marked `warning` in a log
where nothing else counts.

Precedence: a signature's priority // 100 is its band (higher band wins); inside a
band a match from an earlier traceback of a chained exception wins (the cause, not
the wrapper), then the higher priority, then the earlier line. A `python_exception`
match (an exception type with no more specific reading) does not count on a line
that another signature matched: `RuntimeError: NCCL error ...` is an NCCL error.

Speed: one regex of every signature's prefilter literals, factored into a trie,
scans the lower-cased bytes in C; only the lines it hits are decoded, split on
carriage returns, normalized and tried, and each signature only on lines holding one
of its own literals. A signature without literals (possible in user files) makes
every line a candidate.

`classify_file` reads at most the first HEAD_BYTES (1 MiB) and the last TAIL_BYTES
(4 MiB) of a file, decoding with errors="replace": the cause of a failure is in the
tail, the environment (imports, drivers) in the head. A match in the tail of a cut
file has no line number (the lines in between were not counted).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from gpucluster_analysis.classify.rules import CATEGORIES, CAUSE, Signature
from gpucluster_analysis.logline import NON_FATAL_LEVELS, is_blank, level_of, normalize_line, split_prefixes
from gpucluster_analysis.logscan import (
    HEAD_BYTES,
    TAIL_BYTES,
    lines_holding,
    offset_after_line,
    read_parts,
    trie_pattern,
)
from gpucluster_analysis.speed import extract_speed_bytes

__all__ = [
    "HEAD_BYTES",
    "TAIL_BYTES",
    "Classification",
    "Evidence",
    "Match",
    "classify_bytes",
    "classify_file",
    "classify_text",
    "iter_lines",
    "normalize_line",
    "read_bounded",
]


_CHAIN = re.compile(
    r"^(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)"
)
_CHAIN_LITERALS = ("during handling of the above exception", "the above exception was the direct cause")
# Where a Python traceback starts (its lines end at the exception line, a match of a `{EXC}` signature).
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_TRACEBACK_LITERAL = "traceback (most recent call last)"
# A `handled` header ("Exception ignored in: ...") covers a traceback starting at most this many lines later.
HANDLED_REACH = 3
GENERIC_REASON = "python_exception"
# Training steps a run prints after its last failure evidence that show it survived it; fewer
# bytes after it than this cannot hold them (a step's line is longer than 10 bytes).
TRAINED_ON_STEPS = 3
TRAINED_ON_MIN_BYTES = 30


@dataclass(frozen=True)
class Match:
    signature_id: str
    reason: str
    priority: int
    line_number: int | None
    line: str
    chain: int  # index of the traceback in a chained exception (0 = the first one)
    level: str | None = None  # the level its line was logged at, where the line says

    def key(self) -> tuple[int, int, int, int]:
        return (-(self.priority // 100), self.chain, -self.priority, self.line_number or 0)


@dataclass(frozen=True)
class Evidence:
    """A line that an [[evidence]] entry matched, or a signature match that does not count (`why`)."""

    evidence_id: str
    kind: str  # an EVIDENCE_KINDS key, or "discounted" for a signature match that does not count
    line_number: int | None
    line: str
    why: str = ""


@dataclass(frozen=True)
class Classification:
    reason: str
    category: str
    signature_id: str | None
    line_number: int | None
    line: str | None
    matched: list[Match] = field(default_factory=list)
    truncated: bool = False  # only a head and a tail of the file were read
    bytes_read: int | None = None  # by classify_file; None for classify_text
    # the failure evidence that counts, then the lines that made something not count
    evidence: list[Evidence] = field(default_factory=list)

    def explain(self) -> list[str]:
        """Every matching signature in precedence order and why the first one won; for `unknown`
        and `none`, the failure evidence or its absence; then what did not count, and why."""
        out = []
        if self.matched:
            win = self.matched[0]
            for i, m in enumerate(self.matched):
                tag = "winner" if i == 0 else _why(win, m)
                level = f", level {m.level}" if m.level else ""
                out.append(
                    f"{m.signature_id} ({m.reason}, priority {m.priority}, {_where(m.line_number)}, "
                    f"traceback {m.chain}{level}): {tag}: {m.line}"
                )
        failures = [e for e in self.evidence if e.kind == "failure"]
        if self.reason == "unknown":
            out += [f"{e.evidence_id} (failure evidence, {_where(e.line_number)}): {e.line}" for e in failures]
            out.append("no signature names this failure: unknown")
        out += [
            f"{e.evidence_id} ({_KIND_WORDS.get(e.kind, e.kind)}, {_where(e.line_number)}): {e.why}: {e.line}"
            for e in self.evidence
            if e.kind != "failure"
        ]
        if self.reason == "none":
            out.append("no failure evidence counts: none (the log shows no failure; a warning is not a cause)")
        return out


_KIND_WORDS = {"discounted": "does not count", "success": "success", "handled": "handled traceback", "note": "note"}


def _where(line_number: int | None) -> str:
    return "tail of a cut file" if line_number is None else f"line {line_number}"


def _why(win: Match, m: Match) -> str:
    if win.priority // 100 != m.priority // 100:
        return f"loses: band {m.priority // 100} < {win.priority // 100}"
    if win.chain != m.chain:
        return "loses: later traceback of a chained exception"
    if win.priority != m.priority:
        return f"loses: priority {m.priority} < {win.priority}"
    return "loses: later line"


@dataclass(frozen=True)
class _Plan:
    signatures: tuple[Signature, ...]
    trigger: re.Pattern[bytes] | None  # over lower-cased bytes; None: every line is a candidate
    # Over a lower-cased line: at every position, the longest literal starting there.
    literal_at: re.Pattern[str]
    # literal -> indices (into signatures) of the signatures it lets through
    owners: dict[str, tuple[int, ...]]
    unfiltered: tuple[int, ...]  # signatures without a prefilter: tried on every line


@lru_cache(maxsize=16)
def _plan(signatures: tuple[Signature, ...]) -> _Plan:
    literals: set[str] = set(_CHAIN_LITERALS) | {_TRACEBACK_LITERAL}
    full_scan = False
    for sig in signatures:
        if sig.prefilter:
            literals.update(sig.prefilter)
        else:
            full_scan = True
    variants: set[str] = set()
    for lit in literals:  # bytes.lower() only folds ASCII: also look for other cases of the rest
        variants.update({lit, lit.capitalize(), lit.upper()} if not lit.isascii() else {lit})
    trigger = None
    if not full_scan:
        trigger = re.compile(trie_pattern(sorted(variants)).encode("utf-8"))
    owners: dict[str, list[int]] = {lit: [] for lit in literals}
    for i, sig in enumerate(signatures):
        for lit in sig.prefilter:
            owners[lit].append(i)
    unfiltered = tuple(i for i, sig in enumerate(signatures) if not sig.prefilter)
    literal_at = re.compile("(?=(" + trie_pattern(sorted(literals)) + "))")
    return _Plan(signatures, trigger, literal_at, {k: tuple(v) for k, v in owners.items()}, unfiltered)


def _signatures_to_try(low: str, plan: _Plan) -> list[int] | None:
    """Indices of the signatures one of whose literals `low` holds (plus those without
    literals), in file order; None when it holds no literal at all."""
    hit: set[int] = set()
    seen_any = False
    owners = plan.owners
    for m in plan.literal_at.finditer(low):
        longest = m.group(1)
        seen_any = True
        for k in range(1, len(longest) + 1):  # every literal that is a prefix of the longest one
            ids = owners.get(longest[:k])
            if ids:
                hit.update(ids)
    if not seen_any and not plan.unfiltered:
        return None
    hit.update(plan.unfiltered)
    return sorted(hit)


def iter_lines(text: str) -> list[tuple[int, str]]:
    """(line number, normalized line) of every non-blank piece, splitting on \\n and \\r."""
    out = []
    for number, raw in enumerate(text.split("\n"), 1):
        for piece in raw.split("\r"):
            line = normalize_line(piece)
            if not is_blank(line):
                out.append((number, line))
    return out


def _candidate_lines(data: bytes, plan: _Plan) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of the lines that hold a prefilter literal (all lines when
    some signature has none), in order."""
    if plan.trigger is None:
        return enumerate(data.split(b"\n"), 1)
    return lines_holding(data, plan.trigger)


def classify_text(text: str, signatures: list[Signature], *, tail_from_line: int | None = None) -> Classification:
    """Classify a log's text; each signature counts once, at its first match in the first traceback it appears in.

    `tail_from_line`: when `text` is a head and a tail joined at a cut, the first line of
    the tail; matches from there on get no line number (the lines skipped were not counted).
    """
    return classify_bytes(text.encode("utf-8", "surrogatepass"), signatures, tail_from_line=tail_from_line)


def classify_bytes(data: bytes, signatures: list[Signature], *, tail_from_line: int | None = None) -> Classification:
    """`classify_text` for undecoded bytes: only the lines worth looking at are decoded
    (UTF-8, errors replaced)."""
    if b"#015" in data:  # syslog and CloudWatch write carriage returns as #015
        data = data.replace(b"#015", b"\r")
    plan = _plan(tuple(signatures))
    sigs = plan.signatures
    hits: list[_Hit] = []
    notes: list[Evidence] = []
    chain = 0
    block: _Block | None = None  # the traceback being read, until its exception line
    handled_header: tuple[int, Evidence] | None = None  # (raw line number, evidence) of a handled header
    for number, raw_bytes in _candidate_lines(data, plan):
        raw = raw_bytes.decode("utf-8", "replace")
        for piece in raw.split("\r") if "\r" in raw else (raw,):
            to_try = _signatures_to_try(piece.lower(), plan)
            if to_try is None:
                continue
            prefix, line = split_prefixes(piece)
            if is_blank(line):
                continue
            if _CHAIN.match(line):
                chain += 1
                block = None
                continue
            line_number = None if tail_from_line is not None and number >= tail_from_line else number
            encoded = line.encode("utf-8", "surrogatepass")
            found = [sigs[i] for i in to_try if sigs[i].matches_bytes(encoded)]
            note = next((s for s in found if s.kind == "note"), None)
            if note is not None:  # a routine note: nothing on this line counts
                notes.append(Evidence(note.id, "note", line_number, line, "a routine note, not a failure"))
                continue
            if _TRACEBACK.search(line):
                covered = handled_header is not None and number - handled_header[0] <= HANDLED_REACH
                block = _Block(handled=handled_header[1] if covered and handled_header else None)
                handled_header = None
            for sig in found:
                if sig.kind == "handled":
                    ev = Evidence(sig.id, "handled", line_number, line, "the program caught this traceback")
                    if block is not None:
                        block.handled = block.handled or ev
                    else:
                        handled_header = (number, ev)
            causes = [s for s in found if s.kind == CAUSE]
            ends_block = any(s.names_exception for s in causes)
            if len(causes) > 1 and any(s.reason != GENERIC_REASON for s in causes):
                causes = [s for s in causes if s.reason != GENERIC_REASON]
            failures = [s for s in found if s.kind == "failure"]
            success = [s for s in found if s.kind == "success"]
            level = level_of(prefix, line) if causes or failures else None
            if level in NON_FATAL_LEVELS:
                # the program logged it as a warning (or info) and went on: it names no failure,
                # unless its signature says such a line may (counts_at); a traceback right after
                # it is part of what was logged
                below = [s for s in causes if level not in s.counts_at] + failures
                if below:
                    why = f"logged at {level.upper()} level: the program went on"
                    notes.append(Evidence(below[0].id, "discounted", line_number, line, why))
                    causes, failures = [s for s in causes if level in s.counts_at], []
                    if not causes:
                        ev = Evidence(below[0].id, "handled", line_number, line, f"logged at {level.upper()} level")
                        if block is not None and _TRACEBACK.search(line):  # the traceback starts on this line
                            block.handled = block.handled or ev
                        else:
                            handled_header = (number, ev)
            if causes or failures or success:
                hits.append(_Hit(len(hits), line_number, line, chain, block, causes, failures, success, level))
            if ends_block:
                block = None
    return _decide(hits, notes, data)


def _first_of_each(notes: list[Evidence]) -> list[Evidence]:
    """The first line of each note, saying how many lines it covered."""
    counts: dict[str, int] = {}
    for e in notes:
        counts[e.evidence_id] = counts.get(e.evidence_id, 0) + 1
    firsts = {e.evidence_id: e for e in reversed(notes)}
    return [
        dataclasses.replace(e, why=e.why + (f" ({counts[i]} lines)" if counts[i] > 1 else ""))
        for i, e in reversed(list(firsts.items()))
    ]


@dataclass
class _Block:
    """One Python traceback, from its `Traceback (most recent call last)` line to its exception line."""

    handled: Evidence | None = None  # the handled evidence that marks it caught


@dataclass(frozen=True)
class _Hit:
    seq: int
    line_number: int | None
    line: str
    chain: int
    block: _Block | None
    causes: list[Signature]
    failures: list[Signature]
    success: list[Signature]
    level: str | None = None  # the level the line was logged at, where it says


def _trained_on(counting: list[_Hit], data: bytes) -> Evidence | None:
    """The evidence that the run trained on after its last counting failure evidence: the
    speed reader reads TRAINED_ON_STEPS training steps at least in the lines after it. None
    when it does not, or when a line number is unknown (the tail of a cut file)."""
    if not counting or any(h.line_number is None for h in counting):
        return None
    last = max(h.line_number or 0 for h in counting)
    start = offset_after_line(data, last)
    if len(data) - start < TRAINED_ON_MIN_BYTES:  # no room for three steps: most failures end here
        return None
    speed = extract_speed_bytes(data[start:])
    if speed is None or speed.samples_seen < TRAINED_ON_STEPS:
        return None
    first = (speed.samples[0].line_number or 1) + last
    why = f"the run trained on after its last failure evidence ({_where(last)}): {speed.samples_seen} steps after it"
    return Evidence("training_progress", "success", first, f"{speed.pattern_id}: {speed.samples_seen} steps", why)


def _decide(hits: list[_Hit], notes: list[Evidence], data: bytes = b"") -> Classification:
    """Drop what does not count (before the last success, in a handled traceback), then name the cause."""
    last_success = max((h for h in hits if h.success), key=lambda h: h.seq, default=None)
    out: list[Evidence] = []
    if last_success is not None:
        out.append(
            Evidence(
                last_success.success[0].id,
                "success",
                last_success.line_number,
                last_success.line,
                "the run finished or recovered here; what came before does not count",
            )
        )
    counting: list[_Hit] = []
    handled_seen: set[int] = set()
    for h in hits:
        if not (h.causes or h.failures):
            continue
        if last_success is not None and h.seq < last_success.seq:
            why = f"before the success at {_where(last_success.line_number)}"
        elif last_success is not None and h.level in NON_FATAL_LEVELS:
            # teardown after the run finished: a peer gone, a store closed (NCCL, c10d warnings)
            why = f"logged at {h.level.upper()} level after the success at {_where(last_success.line_number)}"
        elif h.block is not None and h.block.handled is not None:
            why = (
                f"in a traceback the program caught ({h.block.handled.evidence_id}, "
                f"{_where(h.block.handled.line_number)})"
            )
            if id(h.block) not in handled_seen:
                handled_seen.add(id(h.block))
                out.append(h.block.handled)
        else:
            counting.append(h)
            continue
        out += [Evidence(s.id, "discounted", h.line_number, h.line, why) for s in h.causes]
    trained_on = _trained_on(counting, data)
    if trained_on is not None:  # what came before did not stop the run
        out.insert(0, trained_on)
        why = f"before the run trained on ({_where(trained_on.line_number)})"
        out += [Evidence(s.id, "discounted", h.line_number, h.line, why) for h in counting for s in h.causes]
        counting = []
    shows_failure = any(h.failures or any(not s.warning for s in h.causes) for h in counting)
    first: dict[str, Match] = {}
    for h in counting:
        for sig in h.causes:
            if sig.warning and not shows_failure:
                out.append(
                    Evidence(
                        sig.id,
                        "discounted",
                        h.line_number,
                        h.line,
                        "a warning, and nothing else in the log shows a failure",
                    )
                )
            elif sig.id not in first:
                first[sig.id] = Match(sig.id, sig.reason, sig.priority, h.line_number, h.line, h.chain, h.level)
    out += _first_of_each(notes)
    matched = sorted(first.values(), key=Match.key)
    if matched:
        win = matched[0]
        return Classification(
            win.reason, CATEGORIES[win.reason], win.signature_id, win.line_number, win.line, matched, evidence=out
        )
    failures = [Evidence(s.id, "failure", h.line_number, h.line) for h in counting for s in h.failures]
    if failures:
        return Classification(
            "unknown",
            CATEGORIES["unknown"],
            None,
            failures[0].line_number,
            failures[0].line,
            [],
            evidence=failures[:1] + out,
        )
    return Classification("none", CATEGORIES["none"], None, None, None, [], evidence=out)


def read_bounded(path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> str:
    """The first `head` and last `tail` bytes of a file, decoded with errors="replace"."""
    first, last, _ = read_parts(Path(path), head, tail)
    data = first if last is None else first + b"\n" + last
    return data.decode("utf-8", errors="replace")


def classify_file(path: Path, signatures: list[Signature]) -> Classification:
    """Classify one log file, reading at most its first 1 MiB and last 4 MiB.

    When the file is cut, a match in its tail has no line number.
    """
    first, last, size = read_parts(Path(path), HEAD_BYTES, TAIL_BYTES)
    if last is None:
        return dataclasses.replace(classify_bytes(first, signatures), bytes_read=size)
    result = classify_bytes(first + b"\n" + last, signatures, tail_from_line=first.count(b"\n") + 2)
    return dataclasses.replace(result, truncated=True, bytes_read=len(first) + len(last))
