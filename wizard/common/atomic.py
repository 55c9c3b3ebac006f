"""Writing a file so that a reader sees the old file or the new one, never a part of either.

Every file ddp-doctor writes (the saved report, the answers, the copy of the error, the
`run --report` JSON, the rules cache) goes through `write_atomic`: the bytes go to a new
temporary file in the same directory, are flushed to disk, and only then take the place of
the target with `os.replace` (atomic on POSIX within one file system). A full disk, a
file-size limit or a crash half-way leaves the old file whole and no temporary file behind.

The temporary file is made by `tempfile.mkstemp` (O_CREAT | O_EXCL, mode 0600), so a planted
file or symlink at its name is never opened. Callers translate the `OSError`s into messages.

An atomic replace is only for regular files. A character device or a FIFO (`/dev/null`,
`/dev/stdout`, a named pipe a script reads) is written in place: replacing it would turn
`/dev/full` into a 19 KB file for every process on the machine. A block device (a disk) is
never written. `follow_symlinks=False` replaces a symlink at `path` itself, never the file
it points to (a planted `report.json -> ~/.bashrc` must not be overwritten).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

# what `open(path, "w")` gives a new file before the umask
_DEFAULT_NEW_MODE = 0o666


def write_atomic(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    overwrite: bool = True,
    mode: int | None = None,
    encoding: str = "utf-8",
    follow_symlinks: bool = True,
) -> Path:
    """Write `data` to `path` atomically; returns the path actually written.

    - `overwrite=False`: fail with FileExistsError if `path` exists, checked atomically at
      the moment the file appears (a hard link), not before writing.
    - `mode`: the new file's permission bits; default: an existing file keeps its own, a new
      one gets what `open()` would give it (0666 less the umask). The cache passes 0600.
    - A symlink at `path` is written through (the link stays, its target gets the content),
      as a plain `open(path, "w")` would do; with `follow_symlinks=False` it is replaced (or,
      with `overwrite=False`, refused as an existing file).
    - A character device or FIFO (also through a link) is written in place, not replaced.
    """
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    if special_file(path):
        _write_in_place(path, payload)
        return Path(path)
    target = Path(os.path.realpath(path) if follow_symlinks else os.path.abspath(path))
    existing = _existing_mode(target, follow_symlinks)
    if existing is not None and not overwrite:
        raise FileExistsError(_errno_exists(), os.strerror(_errno_exists()), str(path))
    final_mode = mode if mode is not None else existing
    if final_mode is None:
        final_mode = _DEFAULT_NEW_MODE & ~_umask()
    fd, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=str(target.parent)
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, final_mode)
        if overwrite:
            os.replace(temporary, target)
        else:
            _link_without_clobbering(temporary, target, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(target.parent)
    return target


def same_file(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """True when both names lead to one existing file (hard links and symlinks included)."""
    try:
        return os.path.samestat(os.stat(first), os.stat(second))
    except (OSError, ValueError):
        return False


def special_file(path: str | os.PathLike[str]) -> bool:
    """`path` leads (through links too) to a character device or a FIFO: written in place.
    A block device or a socket raises: no report ever goes there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    if stat.S_ISBLK(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file, a character device or a FIFO", str(path))
    return stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)


def _write_in_place(path: str | os.PathLike[str], payload: bytes) -> None:
    """Write to a device or FIFO as `>` would, without creating or truncating anything.

    O_NONBLOCK for the open only: a FIFO nobody reads fails at once (ENXIO) instead of
    hanging the command for ever."""
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        os.set_blocking(fd, True)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _existing_mode(target: Path, follow_symlinks: bool = True) -> int | None:
    try:
        info = os.stat(target) if follow_symlinks else os.lstat(target)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, os.strerror(21), str(target))
    if stat.S_ISLNK(info.st_mode):
        return _DEFAULT_NEW_MODE & ~_umask()  # the link is replaced by a new file
    return stat.S_IMODE(info.st_mode)


def _link_without_clobbering(temporary: str, target: Path, shown: str | os.PathLike[str]) -> None:
    try:
        os.link(temporary, target)  # EEXIST if something appeared meanwhile: never replaced
    except FileExistsError:
        raise FileExistsError(_errno_exists(), os.strerror(_errno_exists()), str(shown)) from None
    except OSError:
        # a file system without hard links (some FUSE, FAT): the check above is all we have
        if target.exists():
            raise FileExistsError(
                _errno_exists(), os.strerror(_errno_exists()), str(shown)
            ) from None
        os.replace(temporary, target)
        return
    os.unlink(temporary)


def _errno_exists() -> int:
    return errno.EEXIST


def _umask() -> int:
    # os.umask can only be read by setting it; set it straight back
    current = os.umask(0o022)
    os.umask(current)
    return current


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable; best effort (not every file system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
