"""Find batches and raw files, and stream their lines with bounded memory.

A *record* is one line of a decompressed file, numbered from 1 as a text editor would. A file whose
gzip stream stops early (a truncated or corrupt member) yields one final record carrying the bytes
that were left over and the reason, so the loss is counted rather than silently skipped.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

READ_BYTES = 1 << 20
MAX_RECORD_BYTES = 256 << 20  # the default of the max_record_bytes setting
TOO_LARGE_EXCERPT = 1024  # bytes of an oversized record kept for its quarantine row
_BAD_KEY_PARTS = ("/", "\\", "...", "\0", "\n", "\r", "\t")
# Characters a glob-expanding reader (polars, DuckDB, fsspec) would read as a pattern in a partition path: a
# batch named `*` would read every other batch's rows.
_GLOB_CHARACTERS = frozenset("*?[]{}")
# A partition folder is `batch=<name>`, and a filesystem name holds at most 255 bytes.
MAX_BATCH_NAME_BYTES = 200
# Sub-folders of a batch read: SWE-bench writes its reports 5 levels down (logs/run_evaluation/<run>/<model>/<id>/).
MAX_FOLDER_DEPTH = 8


@dataclass(frozen=True, slots=True)
class RawLine:
    record: int  # 1-based line number in the decompressed file
    data: bytes  # without the trailing newline
    error: str | None = None  # set for the leftover of a stream that ended early


def batch_name_problem(name: str) -> str | None:
    """Why a folder name cannot be a batch (partition key), or None if it can."""
    if name.startswith((".", "_")):
        return "hidden or underscore-prefixed folders are not batches"
    if any(part in name for part in _BAD_KEY_PARTS) or name.strip() != name or not name:
        return "batch folder names may not contain path separators, '...', control characters or edge spaces"
    if _GLOB_CHARACTERS & set(name):
        return "batch folder names may not contain the glob characters * ? [ ] { } (readers would expand them)"
    if len(name.encode()) > MAX_BATCH_NAME_BYTES:
        return f"batch folder names may have at most {MAX_BATCH_NAME_BYTES} bytes (its partition folder must fit)"
    return None


def _unresolvable(path: Path) -> str | None:
    """Why a path cannot be followed (a symbolic link loop, a broken or unreadable link), or None."""
    try:
        path.resolve(strict=path.is_symlink())
    except (OSError, RuntimeError) as exc:
        why = "a symbolic link loop" if isinstance(exc, RuntimeError) or "loop" in str(exc).lower() else str(exc)
        return f"cannot be followed ({why})"
    return None


def _not_a_batch(raw_root: Path, path: Path) -> str | None:
    """Why an entry of the raw root is not a batch folder, or None if it is one."""
    if why := _unresolvable(path):
        return why
    if not path.resolve().is_relative_to(raw_root.resolve()):
        return "resolves outside the raw root (a symlink): never a batch"
    if not path.is_dir():
        return "a file at the raw root: batches are folders"
    return batch_name_problem(path.name)


def discover_batches(raw_root: Path) -> list[str]:
    """Batch folder names under the raw root, sorted: folders inside it with a usable name."""
    if not raw_root.is_dir():
        raise FileNotFoundError(f"raw root {raw_root} is not a directory")
    return sorted(p.name for p in raw_root.iterdir() if _not_a_batch(raw_root, p) is None)


def not_batches(raw_root: Path) -> list[tuple[str, str]]:
    """Entries of the raw root that are not batches, and why (shown to the user, never silent)."""
    return sorted((p.name, why) for p in raw_root.iterdir() if (why := _not_a_batch(raw_root, p)))


def batch_entries(raw_root: Path, batch: str) -> tuple[list[Path], list[tuple[str, str]]]:
    """(regular files of the batch folder and its sub-folders, sorted by path; entries skipped, as (raw_file,
    reason)).

    A batch is a folder as the tool that wrote it laid it out (a harness's output tree, its evaluation reports):
    sub-folders are read down to MAX_FOLDER_DEPTH; a link to a folder is not followed, and hidden folders
    (`.git`) are not read. Which files are raw data is the formats' decision; this only keeps out what cannot
    be read safely."""
    root = raw_root.resolve()
    files, skipped = [], []

    def walk(folder: Path, depth: int) -> None:
        for path in sorted(folder.iterdir()):
            rel = path.relative_to(raw_root).as_posix()
            if why := _unresolvable(path):
                skipped.append((rel, why))
            elif not path.resolve().is_relative_to(root):
                skipped.append((rel, "resolves outside the raw root"))
            elif path.is_dir() and path.is_symlink():
                skipped.append((rel, "a link to a folder: not followed"))
            elif path.is_dir() and path.name.startswith("."):
                skipped.append((rel, "a hidden folder: not read"))
            elif path.is_dir() and depth >= MAX_FOLDER_DEPTH:
                skipped.append((rel, f"a folder more than {MAX_FOLDER_DEPTH} levels inside the batch folder"))
            elif path.is_dir():
                walk(path, depth + 1)
            elif not path.is_file():
                skipped.append((rel, "not a regular file"))
            else:
                files.append(path)

    walk(raw_root / batch, 0)
    return files, skipped


def _chunks(path: Path) -> Iterator[tuple[bytes, str | None]]:
    """Decompressed byte chunks; a final (b"", reason) if a gzip stream ends early or is corrupt."""
    with open(path, "rb") as fh:
        if not path.name.endswith(".gz"):
            while block := fh.read(READ_BYTES):
                yield block, None
            return
        inflater = zlib.decompressobj(wbits=31)
        member_has_input = False
        while block := fh.read(READ_BYTES):
            while True:
                try:  # at most READ_BYTES out at a time: 1 MB of a gzip bomb inflates to ~1 GB
                    out = inflater.decompress(block, READ_BYTES)
                except zlib.error as exc:
                    yield b"", f"corrupt_gzip: {exc}"
                    return
                member_has_input = True
                if out:
                    yield out, None
                if inflater.eof:  # a member ended: the rest of this block starts the next one (multi-member gzip)
                    block = inflater.unused_data
                    inflater = zlib.decompressobj(wbits=31)
                    member_has_input = False
                    if not block:
                        break
                elif inflater.unconsumed_tail or len(out) == READ_BYTES:  # the output bound: go on from there
                    block = inflater.unconsumed_tail
                else:
                    break  # the block is used up
        if member_has_input and not inflater.eof:
            yield inflater.flush(), "truncated_gzip"


def raw_line(path: Path, number: int, limit: int = 300) -> str | None:
    """The first `limit` characters of the file's `number`-th line (1-based, decompressed), as `trace` shows a
    sample's raw line; None when the file has no such line. Reads up to that line, and keeps at most a few bytes
    per character of it."""
    seen, kept = 1, []
    for block, _ in _chunks(path):
        start = 0
        while seen < number:
            newline = block.find(b"\n", start)
            if newline < 0:
                break
            seen, start = seen + 1, newline + 1
        if seen < number:
            continue
        end = block.find(b"\n", start)
        kept.append(block[start : end if end >= 0 else len(block)])
        if end >= 0 or sum(map(len, kept)) >= limit * 4:
            break  # else the line goes on at the start of the next block
    if seen < number or not kept:
        return None
    return b"".join(kept)[: limit * 4].decode("utf-8", errors="replace")[:limit]


def _head(parts: list[bytes]) -> bytes:
    """The first TOO_LARGE_EXCERPT bytes of the parts, without joining them all."""
    out, size = [], 0
    for part in parts:
        out.append(part[: TOO_LARGE_EXCERPT - size])
        size += len(out[-1])
        if size >= TOO_LARGE_EXCERPT:
            break
    return b"".join(out)


def too_large(limit: int) -> str:
    return f"too_large: a record of more than {limit} bytes (max_record_bytes); not read"


def iter_raw_lines(path: Path, max_bytes: int = MAX_RECORD_BYTES) -> Iterator[RawLine]:
    """Stream the lines of one raw file; memory is bounded by `max_bytes`: a longer line is never held whole,
    it becomes one `too_large` record carrying its first bytes."""
    parts: list[bytes] = []  # the line read so far (its parts, joined once: no quadratic concatenation)
    size, record, oversized = 0, 0, False
    for block, error in _chunks(path):
        if error is not None:
            if oversized:
                yield RawLine(record + 1, b"".join(parts), too_large(max_bytes))
            else:
                yield RawLine(record + 1, b"".join(parts) + block, error)
            return
        start = 0
        while (end := block.find(b"\n", start)) >= 0:
            record += 1
            if oversized:
                yield RawLine(record, b"".join(parts), too_large(max_bytes))
            elif size + end - start > max_bytes:
                yield RawLine(record, _head([*parts, block[start:end]]), too_large(max_bytes))
            else:
                yield RawLine(record, b"".join([*parts, block[start:end]]) if parts else block[start:end])
            parts, size, oversized = [], 0, False
            start = end + 1
        rest = block[start:]
        if oversized:
            continue
        if size + len(rest) > max_bytes:  # keep only the excerpt, skip to the end of the line
            parts, oversized = [_head([*parts, rest])], True
        elif rest:
            parts.append(rest)
            size += len(rest)
    if oversized:
        yield RawLine(record + 1, b"".join(parts), too_large(max_bytes))
    elif parts:
        yield RawLine(record + 1, b"".join(parts))
