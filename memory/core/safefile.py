"""Safe reading of the files users hand the library and the CLI (scenarios, pair files, LoCoMo files).

:func:`read_regular_file` reads a regular file of bounded size and nothing else. It refuses, with a
one-line :class:`~memory.core.errors.DataFileError` naming the file: a missing path, a directory, a device
(``/dev/zero``), a FIFO or socket, a file of procfs or sysfs (``/proc/self/...``, whose sizes lie), a
path that resolves outside an allowed ``root`` (a symlink leaving the folder), and a file over the size
cap. The cap is checked on the opened file before reading, and the read stops at ``max_bytes + 1``
bytes in case the file grows meanwhile.

The file is opened once, by its resolved path, with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO cannot block the
open, a last component swapped for a symlink fails), and every check is made on the opened descriptor
(``fstat``), so what is checked is what is read.

:func:`check_folder` is the same guard for a folder the caller will write into (``--data-dir``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memory.core.errors import DataFileError

MAX_FILE_MB_ENV = "MEMORY_MAX_FILE_MB"
"""Environment variable that sets the default size cap, in megabytes."""
DEFAULT_MAX_FILE_MB = 50.0
PSEUDO_ROOTS: tuple[str, ...] = ("/proc", "/sys", "/dev")
"""Kernel pseudo file systems: their files are not data (sizes of 0 or 4096 that lie, endless devices)."""
_CHUNK = 1 << 20
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def max_file_bytes() -> int:
    """The default size cap: ``MEMORY_MAX_FILE_MB`` megabytes (default 50); a bad value is a DataFileError."""
    raw = os.environ.get(MAX_FILE_MB_ENV, "").strip()
    if not raw:
        return int(DEFAULT_MAX_FILE_MB * 1024 * 1024)
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not 0 < mb <= 1024 * 1024:  # also false for nan
        raise DataFileError(f"{MAX_FILE_MB_ENV} must be a number of megabytes in (0, 1048576], got {raw[:40]!r}")
    return int(mb * 1024 * 1024)


def shown(path: str | os.PathLike) -> str:
    """A path as one printable line: characters that would break the line are escaped."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if any(ch in _LINE_BREAKS or not ch.isprintable() for ch in text):
        return ascii(text)
    return text


def read_regular_file(
    path: str | os.PathLike, *, what: str = "file", max_bytes: int | None = None, root: str | os.PathLike | None = None,
) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes (default :func:`max_file_bytes`).

    ``what`` names the kind of file in errors (``"scenario file"``). With ``root``, the resolved path
    must lie inside that folder (symlinks are followed only within it). Every refusal is a
    DataFileError of one line: ``PATH: cannot read WHAT: REASON``. With ``root`` (a folder a server offers its
    users by file name), PATH is the file's name within that folder and no refusal names the folder or where a
    symlink leads: the message may reach a browser, and the server's paths are not its users' business.
    """
    cap = max_file_bytes() if max_bytes is None else max_bytes
    name = shown(path) if root is None else shown(_name_within(path, root))

    def refuse(reason: str) -> DataFileError:
        return DataFileError(f"{name}: cannot read {what}: {reason}")

    try:
        text = os.fspath(path)
    except TypeError:
        raise refuse(f"a path must be text, got {type(path).__name__}") from None
    if not text or "\x00" in str(text):
        raise refuse("the path is empty or holds a NUL character")
    try:
        resolved = Path(text).resolve(strict=True)
    except FileNotFoundError:
        raise refuse("no such file") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on older Pythons
        raise refuse(_reason(exc)) from None
    if root is not None:
        allowed = Path(root).resolve()
        if not resolved.is_relative_to(allowed):
            raise refuse("it leads outside the allowed folder (a symlink to elsewhere is not followed)")
    if _pseudo(resolved):
        where = shown(resolved) if root is None else "it"
        raise refuse(f"{where} is a kernel pseudo-file (procfs, sysfs or a device), not a data file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        raise refuse(_reason(exc)) from None
    try:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind != "regular file":
            raise refuse(f"it is a {kind}, not a regular file")
        if info.st_size > cap:
            hint = f" (set {MAX_FILE_MB_ENV} to raise it)" if max_bytes is None else ""  # a caller's own cap is fixed
            raise refuse(f"it is {info.st_size:,} bytes; the limit is {cap:,}{hint}")
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(_CHUNK, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise refuse(f"it grew past the limit of {cap:,} bytes while being read")
        return b"".join(chunks)
    except OSError as exc:
        raise refuse(_reason(exc)) from None
    finally:
        os.close(fd)


def check_folder(path: str | os.PathLike, *, what: str = "folder") -> Path:
    """``path`` as a Path if it is an existing folder or does not exist yet (the caller creates it).

    Refuses (DataFileError naming it) a file, a device, a FIFO, a kernel pseudo-folder or a path it
    cannot inspect.
    """
    name = shown(path)
    text = os.fspath(path)
    if not text or "\x00" in str(text):
        raise DataFileError(f"{name}: not usable as {what}: the path is empty or holds a NUL character")
    p = Path(text)
    try:
        info = os.stat(p)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise DataFileError(f"{name}: not usable as {what}: {_reason(exc)}") from None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise DataFileError(f"{name}: not usable as {what}: it is a {_kind(info.st_mode)}, not a folder")
    if _pseudo(p.resolve()):
        raise DataFileError(f"{name}: not usable as {what}: it is inside a kernel pseudo file system")
    return p


def _name_within(path: str | os.PathLike, root: str | os.PathLike) -> str:
    """``path`` as named within ``root`` (``folder/x.json`` -> ``x.json``; its last part when it is not under it)."""
    try:
        return os.fspath(Path(os.fspath(path)).relative_to(os.fspath(root)))
    except (TypeError, ValueError):
        try:
            return Path(os.fspath(path)).name
        except TypeError:
            return "?"


def _pseudo(resolved: Path) -> bool:
    return any(resolved == Path(r) or resolved.is_relative_to(r) for r in PSEUDO_ROOTS)


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _reason(exc: BaseException) -> str:
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return shown(text.lower())
