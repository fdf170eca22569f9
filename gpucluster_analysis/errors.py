"""Errors that gca reports to its user, and the exit codes they map to.

Library code raises a `GcaError` subclass with a one-line message that names
the file (and line, where there is one) and a hint saying what to do. Only the
CLI turns these into exit codes; nothing below `cli/` calls `sys.exit`.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    DATA = 1  # the data or a query failed
    USAGE = 2  # bad option, unknown or unreadable input file, invalid rules file, --db not a gca store
    PARTIAL = 3  # --strict was set and rows were rejected
    INTERRUPTED = 130


class GcaError(Exception):
    """An error for the user: `message` says what went wrong, `hint` what to do."""

    exit_code: ExitCode = ExitCode.DATA

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InputError(GcaError):
    """An input file is missing, unreadable or of a format gca does not know."""

    exit_code = ExitCode.USAGE


class NothingToIngestError(GcaError):
    """The folders given hold no file gca reads: an empty folder, a disk not mounted, the wrong path."""

    exit_code = ExitCode.DATA


class LfsPointerError(InputError):
    """The file is a Git LFS pointer: the repository was cloned without git-lfs."""


class ParseError(GcaError):
    """An input file was recognized but cannot be read as a whole."""

    exit_code = ExitCode.USAGE


class RulesError(GcaError):
    """A signatures (rules) file is invalid: unknown key, bad regex, unknown reason..."""

    exit_code = ExitCode.USAGE


class StoreError(GcaError):
    """The DuckDB store is missing, empty, locked or from an incompatible version."""

    exit_code = ExitCode.DATA


class NotAStoreError(StoreError):
    """--db names a file that is not a gca store (a CSV, another application's DuckDB file...):
    refused before anything is written to it."""

    exit_code = ExitCode.USAGE


class QueryError(GcaError):
    """A named query failed or does not exist."""

    exit_code = ExitCode.DATA


class ReportError(GcaError):
    """The report could not be built or written."""

    exit_code = ExitCode.DATA


class StrictRejectsError(GcaError):
    """--strict was given and rows were rejected."""

    exit_code = ExitCode.PARTIAL


class ServerError(GcaError):
    """A server gca pulls from (Prometheus) failed, did not answer, or answered what gca cannot read."""

    exit_code = ExitCode.DATA
