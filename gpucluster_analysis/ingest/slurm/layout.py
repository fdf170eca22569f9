"""The layout of a sacct dump: its columns and delimiter from the header line (or the dashed rule
of fixed-width output, or --columns, or sonar's known layout for a dump without a header),
the lines that are no rows (the tool's messages, a pasted prompt), and where each field the
reader uses stands (Columns)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpucluster_analysis.ingest.slurm.values import EXIT_CODE, JOB_ID, KNOWN_STATES, NO_LIMIT, SACCT_TIME, parse_state

# Columns a dump loads without, leaving what the report needs unknown: (column, the
# lower-case names that stand for it, what is unknown without them).
# What to export: the columns gca reads (README's nightly recipe).
SACCT_FORMAT = (
    "JobID,JobName,User,Account,Partition,QOS,State,ExitCode,Submit,Eligible,Start,End,Timelimit,NNodes,"
    "ReqTRES,AllocTRES,NodeList"
)
# A dump tells gca something of its jobs only with one of these (lower case): a time, the GPUs,
# the nodes, or what the job used (a seff-style dump); `sacct -a` with its default columns
# (JobID, JobName, Partition, Account, AllocCPUS, State, ExitCode) has none.
PLACING_COLUMNS = frozenset(
    {
        *("submit", "eligible", "start", "end", "elapsed", "elapsedraw"),
        *("alloctres", "reqtres", "allocgres", "reqgres", "nodelist"),
        *("totalcpu", "usercpu", "systemcpu", "avecpu", "maxrss", "averss", "tresusageinmax", "tresusageintot"),
    }
)
NEEDED_COLUMNS = (
    ("Start", ("start",), "when runs started"),
    ("End", ("end",), "when runs ended"),
    ("AllocTRES", ("alloctres", "allocgres"), "the GPUs runs held"),
)

_FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_/:]*$")
TOOL_MESSAGES = ("sacct: ", "slurm_load", "slurmdbd: ")
# A terminal session pasted with its prompt: `$ sacct -P ...`, `[ann@login1 ~]$ sacct ...`
PROMPT = re.compile(r"^.{0,80}?[$#%>]\s*(?:sacct|scontrol)\b")
RULE = re.compile(r"^ *+-[\- ]*+$")
# Free-text columns: a '|' inside one shifts the fields after it.
FREE_TEXT = frozenset(
    {
        "jobname",
        "comment",
        "admincomment",
        "systemcomment",
        "workdir",
        "submitline",
        "constraints",
        "reason",
        "container",
        "extra",
        "stdout",
        "stderr",
        "stdin",
    }
)


@dataclass
class Layout:
    columns: list[str]  # lower-case field names, in order
    delimiter: str | None  # None: fixed width
    trailing: bool = False  # --parsable: every line ends with the delimiter
    spans: list[tuple[int, int]] = field(default_factory=list)  # fixed width: byte [start, end) per column
    names: list[str] = field(default_factory=list)  # as written, for messages
    named_by: str = "the header has"  # for messages: what gave the columns (`--columns names`, ...)

    def index(self, name: str) -> int | None:
        try:
            return self.columns.index(name)
        except ValueError:
            return None


# A run of characters no sacct field name or plain value is made of: a delimiter sacct was given
# (`--delimiter`; tools pick `☃` or `^|^` because free text may hold `|`). A tab counts; a space
# (fixed-width output) does not.
DELIMITER_RUN = re.compile(r"[^A-Za-z0-9_.:\-+/=,()\[\]% ]+")


def delimiters_in(line: str) -> list[str]:
    """What may be a headerless row's delimiter: `|` (-P), then each run of DELIMITER_RUN's characters."""
    return list(dict.fromkeys(["|", *DELIMITER_RUN.findall(line)]))


def delimiter_for(line: str, columns: int) -> str | None:
    """The delimiter that splits a headerless row into `columns` fields (or one more: a trailing
    delimiter): the longest of delimiters_in(line) that does; None where none does."""
    text = line.rstrip()
    fits = [
        run
        for run in delimiters_in(text)
        if (n := len(text.split(run))) == columns or (n == columns + 1 and text.endswith(run))
    ]
    # `^|^` splits as `|` does too, into the same count: the longer run is the delimiter
    return max(fits, key=len, default=None)


def header_fields(line: str, given: str | None = None) -> tuple[list[str], str | None] | None:
    """(fields, delimiter) when the line is a sacct header (delimiter None: fixed width);
    `given`: the delimiter the user named (gca ingest --delimiter)."""
    lead = re.match(r"^\s*[A-Za-z][A-Za-z0-9]*", line)
    if not lead:
        return None
    rest = line[lead.end() :]
    if given:
        delimiter = given
        fields = [f.strip() for f in line.split(given)]
    elif rest == "" or rest[0] == " ":
        delimiter = None
        fields = line.split()
    else:
        # what stands between the first two names, however long: `|`, `☃`, reportseff's `^|^`
        found = DELIMITER_RUN.match(rest)
        delimiter = found.group(0) if found else rest[0]
        fields = [f.strip() for f in line.split(delimiter)]
        if fields and fields[-1] == "":
            fields.pop()
    lowered = [f.lower() for f in fields]
    if not ({"jobid", "jobidraw"} & set(lowered)):
        return None
    if not all(_FIELD_NAME.match(f) or (delimiter is None and f.endswith("+")) for f in fields):
        return None
    return fields, delimiter


def fixed_layout(header: str, rule: str) -> Layout | None:
    """The columns of fixed-width output, from its header and the dashed rule under it;
    None when the header does not line up with the rule (a name outside the dashes)."""
    raw_header = header.encode("utf-8")
    raw_rule = rule.encode("utf-8")
    spans = [(m.start(), m.end()) for m in re.finditer(rb"-+", raw_rule)]
    if off_columns(raw_header, spans):
        return None
    names = [raw_header[s:e].decode("utf-8", errors="replace").strip() for s, e in spans]
    return Layout(columns=[n.lower() for n in names], delimiter=None, spans=spans, names=names)


def off_columns(raw: bytes, spans: list[tuple[int, int]]) -> bool:
    """Whether a fixed-width line has text between or after the columns: sacct pads with
    spaces, so such a line was re-spaced (tabs, a proportional-font copy) and its slices lie."""
    if not spans:
        return False
    gaps = [
        raw[: spans[0][0]],
        *(raw[end:start] for (_, end), (start, _) in zip(spans, spans[1:], strict=False)),
        raw[spans[-1][1] :],
    ]
    return any(gap.strip() for gap in gaps)


# NordicHPC/sonar's `sacct -aP --noheader` fields (src/slurmjobs.rs), JobName last: a dump
# of exactly this layout is read without --columns.
SONAR_COLUMNS = (
    "JobID",
    "JobIDRaw",
    "User",
    "Account",
    "State",
    "Start",
    "End",
    "AveCPU",
    "AveDiskRead",
    "AveDiskWrite",
    "AveRSS",
    "AveVMSize",
    "ElapsedRaw",
    "ExitCode",
    "Layout",
    "MaxRSS",
    "MaxVMSize",
    "MinCPU",
    "ReqCPUS",
    "ReqMem",
    "ReqNodes",
    "Reservation",
    "Submit",
    "Suspended",
    "SystemCPU",
    "TimelimitRaw",
    "UserCPU",
    "NodeList",
    "Partition",
    "AllocTRES",
    "Priority",
    "JobName",
)


def is_sonar_row(text: str) -> bool:
    """Whether a headerless line is in sonar's layout: each of the fields gca reads fits it."""
    fields = text.split("|")
    if len(fields) < len(SONAR_COLUMNS):  # JobName, last, may hold '|'
        return False

    def time_like(value: str) -> bool:
        return value in ("", "Unknown", "None") or bool(SACCT_TIME.match(value))

    return (
        JOB_ID.match(fields[0]) is not None
        and re.match(r"^\d+(?:\.[A-Za-z0-9_+\-]+)?$", fields[1]) is not None
        and parse_state(fields[4])[0] in KNOWN_STATES
        and all(time_like(fields[i]) for i in (5, 6, 22))
        and (fields[13] == "" or EXIT_CODE.match(fields[13]) is not None)
        and (fields[25] == "" or fields[25].isdigit() or fields[25].lower() in NO_LIMIT)
        and (fields[29] == "" or "=" in fields[29])
    )


def clean_columns(spec: tuple[str, ...]) -> list[str]:
    # `sacct --format` allows JobName%30: the width is no part of the name.
    return [re.sub(r"%-?\d*$", "", c.strip()) for c in spec if c.strip()]


class Columns:
    """Positions of the fields this reader uses, for one layout."""

    def __init__(self, layout: Layout) -> None:
        def at(*names: str) -> int | None:
            for name in names:
                i = layout.index(name)
                if i is not None:
                    return i
            return None

        self.job_id = at("jobid", "jobidraw")
        self.job_name = at("jobname")
        self.user = at("user")
        self.uid = at("uid")
        self.account = at("account")
        self.cluster = at("cluster")
        self.qos = at("qos")
        self.partition = at("partition")
        self.state = at("state")
        self.exit = at("exitcode")
        self.derived_exit = at("derivedexitcode")  # the highest exit code of the job's steps
        self.submit = at("submit")
        self.eligible = at("eligible")
        self.start = at("start")
        self.end = at("end")
        self.timelimit = at("timelimit")
        self.timelimit_raw = at("timelimitraw")
        self.alloc_tres = at("alloctres")
        self.req_tres = at("reqtres")
        self.alloc_gres = at("allocgres")
        self.req_gres = at("reqgres")
        self.nnodes = at("nnodes", "allocnodes")
        self.nodelist = at("nodelist")
        used = [v for v in vars(self).values() if isinstance(v, int)]
        self.used = frozenset(used)
