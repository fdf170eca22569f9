"""Strip the noise that tools, launchers and pasting put around a log line, and read the level
the line was logged at: what the classifier and the speed reader both read a line through.

A signature sees a line after `normalize_line`: ANSI colour codes removed (also the
`[36m` left when a paste lost the escape character), then, repeatedly, whatever
prefixes a line: leading blanks, markdown quoting, backticks and quotes, box drawing of rich tracebacks,
rank/task tags (`[rank3]:`, `[1,0]<stderr>:`, `0: `), bracketed tags and timestamps
(`[E ProcessGroupNCCL.cpp:458]`, `[2024-01-01 12:00:00,000]`, dmesg `[ 12.3]`),
timestamps, syslog and glog headers, Ray/vLLM `(Worker pid=12)` tags, docker-compose
`service | `, logger `LEVEL - ` headers and host names (`node01: `).
"""

from __future__ import annotations

import re

# Possessive quantifiers (*+, ++, ?+) wherever a repetition meets text it could also match:
# these patterns are tried on every candidate line, and a backtracking one lets a single
# printed line stall the ingest (tests/test_hostile_lines.py).
_ANSI = re.compile(
    r"\x1b\[[0-9;?]*+[A-Za-z]|\x1b\][^\x07\n\x1b]*+(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]"
    r"|(?<![\w\]])\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m"  # "[36m": an ANSI code whose ESC was lost in a paste
)
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|SUCCESS|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_PREFIX = re.compile(
    "|".join(
        [
            r"\s++",  # indentation of a pasted block
            r">++ ?+",  # markdown quoting
            r"[`\"'*]++(?=\S)",  # inline code, quotes and bold pasted around a line
            r"[│┃║|] ?",  # rich box drawing, table borders
            r"\^C(?=\S)",  # ^C glued to the next line
            r"\[[^\[\]\n]{0,120}+\](?:<\w++>)?:?",  # [rank3]: [1,0]<stderr>: [E file.cpp:12] [ 12.5] [2024-..] [INFO]
            r"\d{1,5}+: ",  # srun -l
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d++)?(?:Z|[+-]\d{2}:?\d{2})?",  # ISO time
            r"\d{1,2}/\d{1,2}(?:/\d{2,4})? \d{2}:\d{2}:\d{2}(?:[.,]\d++)?",  # 12/09 06:49:23
            r"\d{2}:\d{2}:\d{2}(?:[.,]\d++)? ",  # bare clock
            r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} ++\d{1,2} \d{2}:\d{2}:\d{2}(?: \d{4})?",  # ctime
            r"[A-Z][a-z]{2} ++\d{1,2} \d{2}:\d{2}:\d{2} \S++ (?:[\w.()-]++(?:\[\d++\])?: )?",  # syslog: host proc[pid]:
            r"[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d++ ++\d++ ++[\w./-]++:\d++\] ?",  # glog
            # Ray / vLLM tags: (Worker pid=1, ip=..), (VllmWorker rank=2 pid=3)
            r"\((?:[\w.-]++ )?(?:\w++=[^\s,()]++,?+ ?+)++\) ?",
            r"[\w.-]++ ++\| ",  # docker compose: service |
            r"-++ (?:[\w.]++ - )?" + _LEVEL + r" ++- ",  # "- mmengine - INFO - "
            _LEVEL + r" \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d++)? ",  # vLLM: "ERROR 05-12 19:01:18 "
            # loguru, "ERROR | ", "INFO - ", "ERROR: X"
            _LEVEL + r" *+(?:\| *+(?:[\w.<>]++:[\w.<>]++:\d++ ++- )?|- |: ?(?=[A-Z]))",
            r"[a-z][\w-]*+(?<=\d)(?:\.[\w.-]++)?: ++",  # host: node01: / gpu-12.cluster: (the name ends in a digit)
            r"\d{1,3}(?:\.\d{1,3}){3}: ++",  # ip:
            r"#015",  # syslog's escaped carriage return
        ]
    )
)
# A prefix is tried on at most this many characters, and stripping stops this far into a line:
# nothing that long is a prefix, and the bound keeps a hostile line's cost fixed.
_PREFIX_REACH = 1024
_PREFIXES_END = 4096
_BOX_ONLY = re.compile(r"^[\s╭╮╰╯─━│┃║┏┓┗┛═=*~#-]*$")
_TRAILING = "│┃║ \t"


def normalize_line(line: str) -> str:
    """The line without ANSI codes and without its rank/host/time/quote/box prefixes."""
    return split_prefixes(line)[1]


def split_prefixes(line: str) -> tuple[str, str]:
    """(the prefixes normalize_line strips, the rest)."""
    line = _ANSI.sub("", line)
    pos = 0
    match = _PREFIX.match
    while pos < _PREFIXES_END:
        m = match(line, pos, pos + _PREFIX_REACH)
        if m is None or m.end() == pos:
            break
        pos = m.end()
    return line[:pos], line[pos:].rstrip(_TRAILING)


# A line's log level, where the line says it (issue #28, part 2), as one of LEVELS.
LEVELS = ("debug", "info", "warning", "error", "fatal")
# A line logged at one of these is not, by itself, the program saying it failed.
NON_FATAL_LEVELS = ("debug", "info", "warning")
_LEVEL_WORDS = {
    "trace": "debug", "debug": "debug", "d": "debug",
    "info": "info", "notice": "info", "success": "info", "i": "info",
    "warning": "warning", "warn": "warning", "w": "warning",
    "error": "error", "err": "error", "e": "error",
    "critical": "fatal", "fatal": "fatal", "f": "fatal",
}  # fmt: skip
# In the stripped prefixes: `[WARNING]`, `[W]`, c10's `[W socket.cpp:...]`/`[W430 12:00:00 ...]`,
# glog's `W1203 10:11:12.123456`, NeMo's `[NeMo W 2024-...`, `- mmdet - INFO - `, loguru's
# `| WARNING |` and `INFO | `, `ERROR 05-12 ...`, `WARNING: `.
_PREFIX_LEVEL = re.compile(
    r"\[(?:NeMo )?+(?P<a>" + _LEVEL + r"|[DIWEF])(?:\]|[ \d])"
    r"|(?:^|[\s|])(?P<b>[IWEF])\d{4} \d{2}:"
    r"|(?:^|[\s|-])(?P<c>" + _LEVEL + r")(?: *+[|:-]| \d)",
    re.IGNORECASE,
)
# At the start of what is left: Python logging's `WARNING:name:`, `name: [WARNING]`,
# `wandb: WARNING`, `INFO:jax._src.xla_bridge:`; Python's warnings module, `file.py:237:
# UserWarning: ...` (any category named ...Warning); anywhere: NCCL's own `NCCL WARN`/`NCCL INFO`.
_MESSAGE_LEVEL = re.compile(
    r"^(?:[\w.]++: ?+)?\[?(?P<a>" + _LEVEL + r")\]?(?=[: ])"
    r"|^(?:[A-Za-z]:)?+[^\s:]++:\d++: [A-Z]\w*+(?<=(?P<c>Warning)):"
    r"|\bNCCL (?P<b>INFO|WARN)\b",
    re.IGNORECASE,
)


def line_level(line: str) -> str | None:
    """The level the line says it was logged at (debug, info, warning, error, fatal), from its
    prefixes or the start of its message; None where it says none."""
    return level_of(*split_prefixes(line))


def level_of(prefix: str, rest: str) -> str | None:
    """line_level of a line split_prefixes already split."""
    for text, pattern in ((prefix, _PREFIX_LEVEL), (rest[:200], _MESSAGE_LEVEL)):
        m = pattern.search(text)
        if m is not None:
            word = next(g for g in m.groups() if g is not None)
            return _LEVEL_WORDS[word.lower()]
    return None


def is_blank(line: str) -> bool:
    """Nothing left to classify: empty, or only rules and box drawing."""
    return not line or _BOX_ONLY.match(line) is not None
