"""`gca classify`: the failure reason of job logs, from signatures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._output import guarded, json_text
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.printable import printable


@guarded
def classify(
    files: Annotated[
        list[Path], typer.Argument(help="Log files to classify (stdout.log, stderr.log, slurm-*.out...).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file and line.")] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="List every matching signature in precedence order and why the winner won; for unknown and none, "
            "the failure evidence or its absence, and what did not count.",
        ),
    ] = False,
    signatures: Annotated[
        list[Path] | None,
        typer.Option(
            "--signatures", help="A TOML file of extra signatures; one with a shipped id replaces it. Repeatable."
        ),
    ] = None,
) -> None:
    """Classify why each job log failed: one line per file, path, reason, category, signature, line.

    The reason is `none` for a log that shows no failure (a warning is not a cause) and
    `unknown` for one that shows a failure no signature names (its line is that evidence's).
    Reads at most the first 1 MiB and the last 4 MiB of each file; a match in the
    tail of a file cut that way has no line number ("-").

    Example: gca classify examples/synthetic/logs/*/attempt_0/stderr.log --explain
    """
    from gpucluster_analysis.classify import classify_file, load_signatures

    sigs = load_signatures(list(signatures or []))
    for path in files:
        if not path.is_file():
            raise InputError(f"{path}: no such file", "give the path of a log file")
        try:
            result = classify_file(path, sigs)
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror or e}", "check the path and its permissions") from None
        if as_json:
            obj: dict[str, object] = {
                "path": str(path),
                "reason": result.reason,
                "category": result.category,
                "signature": result.signature_id,
                "line_number": result.line_number,
                "line": result.line,
                "truncated": result.truncated,
            }
            if explain:
                obj["matched"] = [
                    {
                        "signature": m.signature_id,
                        "reason": m.reason,
                        "priority": m.priority,
                        "line_number": m.line_number,
                        "traceback": m.chain,
                        "line": m.line,
                    }
                    for m in result.matched
                ]
                obj["evidence"] = [
                    {"id": e.evidence_id, "kind": e.kind, "line_number": e.line_number, "line": e.line, "why": e.why}
                    for e in result.evidence
                ]
                obj["explain"] = result.explain()
            typer.echo(json_text(obj))
        else:
            sig = result.signature_id or "-"
            line_no = "-" if result.line_number is None else str(result.line_number)
            # one line of five tab-separated fields, whatever the path or the log holds
            typer.echo(
                "\t".join(printable(str(field)) for field in (path, result.reason, result.category, sig, line_no))
            )
            if explain:
                for text in result.explain():
                    typer.echo(f"  {printable(text)}")
