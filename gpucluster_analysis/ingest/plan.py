"""Which files an ingest reads, in which format, before anything is stored: PATHs resolved to
(file, format) pairs (a folder walked, its files recognized or reported as skipped), then cut
into the segments the orchestrator stores (a batch of parse-only files, or one file)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from gpucluster_analysis.errors import InputError, LfsPointerError, NothingToIngestError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions
from gpucluster_analysis.ingest.files import LFS_POINTER, not_lfs_pointer, read_head
from gpucluster_analysis.ingest.logs.joblogs import LOG_LIKE_SUFFIXES
from gpucluster_analysis.ingest.progress import IngestListener
from gpucluster_analysis.ingest.registry import claim_by_path, detect_format, format_named, near_miss

# Parse-only formats (job logs) are stored this many files per transaction.
PARSED_BATCH_FILES = 2000
# Why a log-like file in a walked directory was not ingested.
UNPLACED_LOG = "a job log whose job gca cannot tell from its path (see --log-pattern)"
DANGLING_LINK = "a symbolic link whose target does not exist"
# The public Philly trace ships as trace-data.tar.gz.
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tar.xz", ".7z")


def plan_files(
    paths: list[Path], format_name: str | None, listener: IngestListener, options: IngestOptions | None = None
) -> list[tuple[Path, FileFormat]]:
    """Resolve PATHs to (file, format) pairs before anything is stored.

    A file named explicitly must exist, be readable and be recognized (else
    InputError). Inside a directory, unrecognized files and symbolic links to nothing
    are reported as skipped, job logs whose job gca cannot tell from their path
    separately. Directories holding no file gca reads are a NothingToIngestError.
    """
    options = options or IngestOptions()
    forced = format_named(format_name) if format_name else None
    plan: list[tuple[Path, FileFormat]] = []
    found = 0  # files inside the directories
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if path.is_dir():
            first = len(plan)
            for child in _walk(path):
                found += 1
                if child.is_symlink() and not child.exists():
                    listener.skipped(child, DANGLING_LINK)
                    continue
                try:
                    fmt = _recognize(child, forced, options)
                except LfsPointerError as e:  # a clone without git-lfs: say so, ingest the rest
                    listener.skipped(child, f"{e.message.split(': ', 1)[1]} ({e.hint})")
                    continue
                if fmt is None and child.name.endswith(LOG_LIKE_SUFFIXES):
                    listener.skipped(child, UNPLACED_LOG)
                elif fmt is None:
                    listener.skipped(child, _why_unread(child) or "not a format gca reads")
                else:
                    plan.append((child, fmt))
            plan[first:] = _without_variants(plan[first:], listener)
            continue
        fmt = _recognize(path, forced, options)
        if fmt is None and path.name.endswith(_ARCHIVE_SUFFIXES):
            raise InputError(
                f"{path}: an archive; gca reads the files inside it",
                hint=f"extract it first (e.g. tar xzf {path.name}) and ingest the folder",
            )
        if fmt is None and path.name.endswith(LOG_LIKE_SUFFIXES):
            raise InputError(
                f"{path}: looks like a job log, but its path does not say which job it belongs to",
                hint="name the layout with --log-pattern, e.g. --log-pattern '{job_id}/{attempt}/stderr.txt'",
            )
        if fmt is None and (why := _why_unread(path)):
            hint = "check that the tool that wrote it finished" if why == EMPTY else None
            raise InputError(f"{path}: {why}", hint=hint)
        if fmt is None:
            raise InputError(
                f"{path}: not a format gca recognizes",
                hint="pass --format NAME if it is one; `gca ingest --help` lists the formats",
            )
        plan.append((path, fmt))
    if paths and not plan:
        raise _nothing_to_ingest(paths, found)
    return plan


def _without_variants(found: list[tuple[Path, FileFormat]], listener: IngestListener) -> list[tuple[Path, FileFormat]]:
    """A folder's files less those its format calls variants of another there (FileFormat.variants)."""
    groups: dict[tuple[str, Path], tuple[FileFormat, list[Path]]] = {}
    for child, fmt in found:
        if fmt.variants is not None:
            groups.setdefault((fmt.name, child.parent), (fmt, []))[1].append(child)
    skip: dict[Path, str] = {}
    for fmt, paths in groups.values():
        assert fmt.variants is not None  # grouped only if it has them
        skip.update(fmt.variants(paths))
    for path, why in sorted(skip.items()):
        listener.skipped(path, why)
    return [(c, f) for c, f in found if c not in skip]


EMPTY = "empty"


def _why_unread(path: Path) -> str | None:
    """Why a file no format took is not read, where that says more than "not a format": it is
    empty (no byte, or blanks only, as far as 64 KiB: a bigger file is not empty), or the format
    it nearly is says why it is not one (registry.near_miss)."""
    try:
        with path.open("rb") as f:
            start = f.read(1 << 16)
        if len(start) < 1 << 16 and not start.strip():
            return EMPTY
        return near_miss(read_head(path))
    except (InputError, OSError):
        return None


def _nothing_to_ingest(folders: list[Path], found: int) -> NothingToIngestError:
    """Only folders get here: a file named explicitly that gca cannot read is an InputError."""
    shown = ", ".join(str(p) for p in folders[:3]) + (f" and {len(folders) - 3:,} more" if len(folders) > 3 else "")
    one = len(folders) == 1
    if not found:
        return NothingToIngestError(
            f"{shown}: nothing to ingest, {'an empty folder' if one else 'empty folders'}",
            hint="check the path: is its disk mounted, are the files there yet?",
        )
    which = (
        f"{'its' if one else 'their'} only file is not"
        if found == 1
        else f"none of {'its' if one else 'their'} {found:,} files is"
    )
    return NothingToIngestError(
        f"{shown}: nothing to ingest, {which} one gca reads (listed as skipped)",
        hint="pass --format NAME if they are one; `gca ingest --help` lists the formats",
    )


def _walk(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root) / name


def _recognize(path: Path, forced: FileFormat | None, options: IngestOptions) -> FileFormat | None:
    if forced is None and (by_path := claim_by_path(path, options)) is not None:
        return by_path
    try:
        head = read_head(path)
    except InputError:  # a damaged gzip, or a Git LFS pointer named *.gz
        not_lfs_pointer(path)
        raise
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from e
    if head.startswith(LFS_POINTER.decode()):
        not_lfs_pointer(path)
    if forced is not None and not forced.sniff(head):
        # the format named does not fit, another does: say what the file looks like
        other = detect_format(path, head)
        if other is not None and other is not forced:
            raise InputError(
                f"{path}: looks like {other.name} ({other.description}), not {forced.name}",
                hint=f"drop --format (gca recognizes it), or pass --format {other.name}",
            )
    return forced if forced else detect_format(path, head)


def plan_segments(plan: list[tuple[Path, FileFormat]]) -> list[tuple[int, int, bool]]:
    """plan[i:j] pieces in order: a batch of up to PARSED_BATCH_FILES files of one
    parse-only format (True), or one file loaded on its own (False)."""
    out, i = [], 0
    while i < len(plan):
        fmt = plan[i][1]
        if fmt.parse is None:
            out.append((i, i + 1, False))
            i += 1
            continue
        j = i
        while j < len(plan) and plan[j][1] is fmt and j - i < PARSED_BATCH_FILES:
            j += 1
        out.append((i, j, True))
        i = j
    return out
