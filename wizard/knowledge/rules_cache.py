"""The rules cache: parsed, validated rules as plain data, so that most runs skip YAML.

It lives in `$XDG_CACHE_HOME/ddp-doctor` (default `~/.cache/ddp-doctor`), one file per set
of rules files (`rules-KEY.marshal`, KEY a hash of their paths, of what `stat` says of each
(size, times, inode: kb._file_stamp) and of the Python version). The payload is JSON, or
`marshal` for the rules (`codec`): the rules are read on every run, and `marshal.loads`
reads them in a third of the time `json.loads` takes, without decoding UTF-8 first.
`marshal` is not meant for data from others, and it need not be: a cache file is read only
under the checks below (our own file, in our own private folder, with the digest of what we
wrote), and it is plain data (dicts, lists, strings, numbers), checked for its shape by the
loader like the JSON was. In a shared or hostile place (`HOME=/tmp` in a container, a CI
runner) another user could plant a cache or a symlink there, so:

- the folder is created 0700 and used only if it is a real folder (not a symlink) owned by
  this user and writable by no one else; it is opened once and everything else happens
  relative to that open folder, so it cannot be swapped in between;
- a cache file is read only if it is a regular file owned by this user (never through a
  symlink, never blocking on a FIFO), at most MAX_BYTES, and its payload matches the size
  and CRC-32 in its header line (`ddp-doctor-cache FORMAT CODEC SIZE DIGEST`, plain
  words: a terminal report never imports `json`); anything else is a miss, never an error;
- a new cache file is written to a fresh temporary name (O_CREAT | O_EXCL, mode 0600, a
  random name, as `tempfile.mkstemp` makes it) in that folder and renamed over the old one,
  so a planted file or symlink is replaced, never written through;
- after a write, only the newest KEEP_PER_KIND files of that kind stay (every upgrade or edit
  of the rules makes a new one), and temporary files a killed writer left are removed; only
  our own regular files are ever removed.

The loader (kb.py) also checks the shape of what it reads and rebuilds from the YAML when
building from the cache fails. Only the standard library's small modules are imported: the
cache is on every run's path.
"""

from __future__ import annotations

import marshal
import os
import stat

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_BYTES = 32 << 20  # the built-in rules cache to ~300 KB
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ddp-doctor")


def supported() -> bool:
    """Folder-relative, symlink-refusing file access (POSIX); elsewhere there is no cache."""
    return (
        hasattr(os, "O_NOFOLLOW")
        and hasattr(os, "O_DIRECTORY")
        and os.open in os.supports_dir_fd
        and hasattr(os, "getuid")
    )


def _open_dir(create: bool) -> int | None:
    """An open descriptor of the cache folder if it is safe to use, else None."""
    path = cache_dir()
    try:
        if create:
            os.makedirs(path, mode=0o700, exist_ok=True)
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        os.close(fd)  # someone else's, or others may write into it: not ours to trust
        return None
    return fd


def _digest(payload: bytes) -> str:
    """CRC-32 of the payload: what tells a damaged or truncated file from the one written.
    Nothing here needs a cryptographic hash (the folder is private and checked, the file
    written whole and renamed), and BLAKE2 over the ~550 KB read on every run cost ~7 M
    instructions (~0.5 ms), CRC-32 ~2 M."""
    from zlib import crc32

    return f"crc32-{crc32(payload):08x}"


CODECS = ("json", "marshal")


def read(name: str, fmt: int, codec: str = "json") -> Any | None:
    """The cached value stored under `name` with format `fmt`, or None on any doubt."""
    if not supported():
        return None
    folder = _open_dir(create=False)
    if folder is None:
        return None
    try:
        data = _read_file(name, folder)
    finally:
        os.close(folder)
    if data is None:
        return None
    header, _, payload = data.partition(b"\n")
    if header != _header(fmt, codec, payload):
        return None
    try:
        if codec == "marshal":
            return marshal.loads(payload)
        import json

        return json.loads(payload)
    except (ValueError, EOFError, TypeError, RecursionError, MemoryError):
        return None


def _header(fmt: int, codec: str, payload: bytes) -> bytes:
    """The header line of a cache file holding `payload` (without the newline)."""
    return f"{MAGIC} {fmt} {codec} {len(payload)} {_digest(payload)}".encode()


MAGIC = "ddp-doctor-cache"


def _read_file(name: str, folder: int) -> bytes | None:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder)
    except OSError:  # missing, a symlink (ELOOP), unreadable
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return None
        if info.st_size > MAX_BYTES:
            return None
        chunks, total = [], 0
        while total <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks) if total <= MAX_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write(name: str, fmt: int, value: Any, codec: str = "json") -> None:
    """Store `value` (plain data) under `name`; a folder that is not safe, read-only or full
    only costs speed, never an error."""
    if not supported():
        return
    if codec == "marshal":
        payload = marshal.dumps(value)
    else:
        import json

        payload = json.dumps(value, ensure_ascii=False).encode("utf-8")
    header = _header(fmt, codec, payload)
    folder = _open_dir(create=True)
    if folder is None:
        return
    temporary = f".{name}.{os.urandom(8).hex()}.tmp"
    try:
        fd = os.open(temporary, _NEW_FLAGS, 0o600, dir_fd=folder)
        try:
            os.write(fd, header + b"\n")
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        _prune(folder, name)
    except OSError:
        from contextlib import suppress

        with suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
    finally:
        os.close(folder)


# Cache files of one kind kept side by side. Every upgrade, reinstall or edit of a rules file
# makes a new one (its key is the files' `stat`), so without a bound the folder only grows
# (~1.6 MB a set of rules); a few are kept for a user who switches between installs or rules
# folders, each of which then still starts from its own cache.
KEEP_PER_KIND = 4
STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old was left by a writer that died


def _prune(folder: int, written: str) -> None:
    """Remove this kind's oldest cache files beyond KEEP_PER_KIND, and temporary files a
    killed writer left behind. Only our own regular files are touched (the folder is private,
    see `_open_dir`); a file another run reads at that moment stays readable to it (POSIX
    unlink), and a run that finds it gone only rebuilds it."""
    import time

    kind = written.split("-", 1)[0] + "-"
    stale = time.time() - STALE_TEMPORARY_SECONDS
    same_kind = []
    for name, modified in _own_files(folder):
        if name.startswith("." + kind) and name.endswith(".tmp"):
            if modified < stale:
                _remove(name, folder)
        elif name.startswith(kind) and name != written:
            same_kind.append((modified, name))
    for _, name in sorted(same_kind, reverse=True)[KEEP_PER_KIND - 1 :]:
        _remove(name, folder)


def _own_files(folder: int) -> list[tuple[str, float]]:
    """Name and modification time of the folder's regular files owned by this user (never a
    symlink, a folder or a FIFO); [] where a folder cannot be listed by its descriptor."""
    if os.scandir not in os.supports_fd:
        return []
    uid, found = os.getuid(), []
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:  # removed meanwhile
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_uid == uid:
                    found.append((entry.name, info.st_mtime))
    except OSError:
        return []
    return found


def _remove(name: str, folder: int) -> None:
    from contextlib import suppress

    with suppress(OSError):  # gone already, or not ours: pruning is only housekeeping
        os.unlink(name, dir_fd=folder)
