"""Rules files are input too: read them so that no file can hang, exhaust or crash a run.

A rules directory (`--rules`, DDP_DOCTOR_RULES) is chosen by the user but may hold anything:
a FIFO or a link to /dev/zero named `x.yaml`, an unreadable folder, a YAML "billion laughs"
(aliases nested ten deep that expand to 10^10 values), placeholders that `str.format` turns
into a crash or a 10 GB string (`{0}`, `{path`, `{module:>9999999999}`). Each of these ends
in a `RulesProblem` (line and what is wrong), which the loader reports with the file name.
Only the standard library is imported here until YAML is parsed (the cache-hit path reads
rules files too, to hash them).
"""

from __future__ import annotations

import os
import stat

MAX_FILE_BYTES = 4 << 20  # the built-in rules are ~150 KB all together
MAX_DEPTH = 40  # nesting of mappings and lists (the built-in rules need 8)
MAX_VALUES = 200_000  # values after expanding aliases (the built-in rules have ~20,000)
# the placeholders the code fills in rule texts (render.snippet_fields, engine's questions)
# said: render._said; device_ids, wrap: the built-in placeholders of fixes.yaml (facts)
TEXT_FIELDS = frozenset({"module", "modules", "param_names", "said", "device_ids", "wrap"})


class RulesProblem(Exception):
    """What is wrong with one rules file, and on which line (None: the whole file)."""

    def __init__(self, line: int | None, message: str):
        super().__init__(message)
        self.line, self.message = line, message


def read_bytes(path: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; never blocks on a FIFO or a
    device. Raises RulesProblem (or OSError when the file cannot be opened)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RulesProblem(None, "not a regular file (a FIFO, a device or a folder?)")
        if info.st_size > MAX_FILE_BYTES:
            raise RulesProblem(None, f"too big: {info.st_size} bytes (at most {MAX_FILE_BYTES})")
        chunks, total = [], 0
        while total <= MAX_FILE_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_FILE_BYTES:  # it grew while being read
            raise RulesProblem(None, f"too big: more than {MAX_FILE_BYTES} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RulesProblem(line, f"not UTF-8 text: {exc.reason}") from None


def list_yaml(folder: str) -> list[str]:
    """The `*.yaml` names in `folder`, sorted; RulesProblem when it cannot be listed."""
    try:
        return sorted(name for name in os.listdir(folder) if name.endswith(".yaml"))
    except OSError as exc:
        raise RulesProblem(None, f"cannot list the folder: {exc.strerror}") from None


# ---------------------------------------------------------------------------- structure


def check_structure(text: str, loader) -> None:
    """Refuse nesting deeper than MAX_DEPTH and aliases expanding past MAX_VALUES values,
    from the parser's events, before anything is built (building is where a bomb explodes:
    the expanded data is walked, copied and cached)."""
    import yaml

    total = 0
    open_nodes: list[tuple[str | None, int]] = []  # anchor, values before it started
    sizes: dict[str, int] = {}  # expanded size of each anchored node
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            total += sizes.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            total += 1
            open_nodes.append((event.anchor, total - 1))
            if len(open_nodes) > MAX_DEPTH:
                raise RulesProblem(_line(event), f"nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, before = open_nodes.pop()
            if anchor:
                sizes[anchor] = total - before
        if total > MAX_VALUES:
            raise RulesProblem(
                _line(event),
                f"more than {MAX_VALUES} values once aliases (*name) are expanded: "
                "an alias bomb? Write the values out instead of nesting aliases",
            )


def _line(event) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


# ---------------------------------------------------------------------------- placeholders


def placeholder_problem(template: str, allowed) -> str | None:
    """Why `template` cannot be filled safely with str.format, or None.

    Only bare names from `allowed` are accepted: no positional `{0}`, no attribute or index
    (`{module.__class__}`), no conversion, no format spec (`{module:>9999999999}` would
    allocate gigabytes), no unbalanced brace (write `{{` and `}}` for a literal one)."""
    from string import Formatter

    try:
        parts = [
            (f, spec, conv) for _, f, spec, conv in Formatter().parse(template) if f is not None
        ]
    except ValueError as exc:
        return f"broken placeholder: {exc} (write {{{{ and }}}} for literal braces)"
    for field, spec, conversion in parts:
        if field not in allowed:
            known = ", ".join(f"{{{name}}}" for name in sorted(allowed)) or "none"
            return f"unknown placeholder {{{field}}} (known here: {known})"
        if spec or conversion:
            return f"placeholder {{{field}}} may not carry a format spec or conversion"
    return None


def placeholders(template: str) -> set[str]:
    """The names a (valid) template uses."""
    from string import Formatter

    try:
        return {f for _, f, _, _ in Formatter().parse(template) if f}
    except ValueError:
        return set()
