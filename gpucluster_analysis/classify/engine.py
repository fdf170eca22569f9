"""Classify a job log: normalize the noise, match every signature, pick the root cause.

Precedence: a signature's priority // 100 is its band (higher band wins); inside a
band a match from an earlier traceback of a chained exception wins (the cause,
not the wrapper), then the higher priority, then the earlier line.

`classify_file` reads at most the first HEAD_BYTES (1 MiB) and the last
TAIL_BYTES (4 MiB) of a file, decoding with errors="replace": the cause of a
failure is in the tail, and the environment (imports, drivers) in the head.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster_analysis.classify.rules import CATEGORIES, Signature

HEAD_BYTES = 1 << 20
TAIL_BYTES = 4 << 20

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_CHAIN = re.compile(
    r"^(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)"
)
# Prefixes that ranks, launchers, loggers and renderers put before a line; stripped repeatedly.
_PREFIXES = [
    re.compile(r"^\s*>\s?"),  # markdown quoting
    re.compile(r"^\s*[│┃║|]\s?"),  # rich / box drawing
    re.compile(r"^\[(?:rank|RANK)\s*\d+\]:\s?"),  # torchrun [rank3]:
    re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?"),  # mpirun --tag-output
    re.compile(r"^\d{1,5}:\s"),  # srun -l "0: "
    re.compile(r"^\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?\s*"),  # timestamps
    re.compile(r"^[a-z][\w-]*\d+(?:\.[\w.-]+)?:\s+"),  # host prefix: node01: / gpu-12.cluster:
    re.compile(r"^\^C(?=\S)"),  # ^C glued to the next line
]
_BOX_ONLY = re.compile(r"^[\s╭╮╰╯─━│┃║┏┓┗┛═]*$")


@dataclass(frozen=True)
class Match:
    signature_id: str
    reason: str
    priority: int
    line_number: int
    line: str
    chain: int  # index of the traceback in a chained exception (0 = the first one)

    def key(self) -> tuple[int, int, int, int]:
        return (-(self.priority // 100), self.chain, -self.priority, self.line_number)


@dataclass(frozen=True)
class Classification:
    reason: str
    category: str
    signature_id: str | None
    line_number: int | None
    line: str | None
    matched: list[Match] = field(default_factory=list)

    def explain(self) -> list[str]:
        """Every matching signature in precedence order, and why the first one won."""
        if not self.matched:
            return ["no signature matched: unknown"]
        out = []
        win = self.matched[0]
        for i, m in enumerate(self.matched):
            tag = "winner" if i == 0 else _why(win, m)
            out.append(f"{m.signature_id} ({m.reason}, priority {m.priority}, line {m.line_number}, "
                       f"traceback {m.chain}): {tag}: {m.line}")
        return out


def _why(win: Match, m: Match) -> str:
    if win.priority // 100 != m.priority // 100:
        return f"loses: band {m.priority // 100} < {win.priority // 100}"
    if win.chain != m.chain:
        return "loses: later traceback of a chained exception"
    if win.priority != m.priority:
        return f"loses: priority {m.priority} < {win.priority}"
    return "loses: later line"


def normalize_line(line: str) -> str:
    """Strip ANSI codes and rank/host/timestamp/quote/box prefixes from one line."""
    line = _ANSI.sub("", line)
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            new = prefix.sub("", line, count=1)
            if new != line:
                line, changed = new, True
    line = line.rstrip().rstrip("│┃║").rstrip()
    return line


def iter_lines(text: str) -> list[tuple[int, str]]:
    """(line number, normalized line), splitting on \\n and on \\r (progress bars)."""
    out = []
    for number, raw in enumerate(text.split("\n"), 1):
        for piece in raw.split("\r"):
            line = normalize_line(piece)
            if line and not _BOX_ONLY.match(line):
                out.append((number, line))
    return out


def classify_text(text: str, signatures: list[Signature]) -> Classification:
    """Classify a log's text; each signature counts once, at its first match in the first traceback it appears in."""
    first: dict[str, Match] = {}
    chain = 0
    for number, line in iter_lines(text):
        if _CHAIN.match(line):
            chain += 1
            continue
        for sig in signatures:
            if sig.id in first:
                continue
            if sig.regex.search(line):
                first[sig.id] = Match(sig.id, sig.reason, sig.priority, number, line, chain)
    matched = sorted(first.values(), key=Match.key)
    if not matched:
        return Classification("unknown", CATEGORIES["unknown"], None, None, None, [])
    win = matched[0]
    return Classification(win.reason, CATEGORIES[win.reason], win.signature_id, win.line_number, win.line, matched)


def read_bounded(path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> str:
    """The first `head` and last `tail` bytes of a file, decoded with errors="replace"."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        if size <= head + tail:
            data = f.read()
        else:
            first = f.read(head)
            f.seek(size - tail)
            data = first + b"\n" + f.read(tail)
    return data.decode("utf-8", errors="replace")


def classify_file(path: Path, signatures: list[Signature]) -> Classification:
    """Classify one log file, reading at most its first 1 MiB and last 4 MiB.

    When the file is cut, line numbers in the tail count from the cut.
    """
    return classify_text(read_bounded(Path(path)), signatures)
