"""Find the question in a post: its prose sentences apart from the logs and code it quotes.

Real questions are long: a story, a pasted warning or traceback, then "any idea?", or
"1. ... 2. ...". `ddp-doctor ask` reads the quoted log as a paste (triage) and the prose as
what the user says and asks. Pure: text in, parts out; no knowledge base (which sentences
ask is decided with the lexicon's question cues in ask.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^\s*(```|~~~)")
# a line a program printed, not a person: a traceback and its frames, an exception line, a
# rank or time prefix, a prompt, or indented code
_LOG_LINE = re.compile(
    r"^(?:\s*Traceback \(most recent call last\)"
    r"|\s*File \"[^\"]*\", line \d+"
    r"|\s*\[(?:rank|default)\d*\]"
    # an exception line, with its message or alone ("RuntimeError when using two models", a
    # title, is prose)
    r"|\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning)\b(?::|\s*$)"
    r"|\s*\d{4}-\d\d-\d\d[ T]\d\d:\d\d"
    r"|[IWEF]\d{4} \d\d:\d\d"  # glog: W1202 16:11:01
    r"|\s*(?:/|~/|[A-Za-z]:\\)\S+:\d+"  # /path/file.py:368: UserWarning ...
    r"|\s*\S+\.py:\d+: "  # ... a path cut at its start: packages/torch/utils/checkpoint.py:429:
    r"|\s*(?:/|~/|[A-Za-z]:\\)\S+\.py in [\w<]"  # a Jupyter traceback's frame: ... in f()
    r"|\s*-+> ?\d+\s"  # ... and its arrow at the failing line: --> 358     raise ...
    r"|\s*(?:>>>|\$) "
    r"|(?: {4}|\t)\S"
    r"|\s*(?:INFO|WARNING|ERROR|DEBUG)\b)"
)
# an exception a program raised: "RuntimeError: ...", "[rank0]: torch.OutOfMemoryError: ..."
_RAISED = re.compile(
    r"^\s*(?:\[(?:rank|default)\d*\]:?\s*)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b:",
    re.MULTILINE,
)
# ... or one a sentence quotes ('terminal reported `RuntimeError: Default process group has not
# been initialized ...`'): its name with a colon and a message, up to the quote's end or the
# question after it (", what can I do?"); a title such as "RuntimeError when using two models"
# names no message, and "Error: ..." no exception
_RAISED_IN_PROSE = re.compile(
    r"(?<![\w.])(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): +[^\s`'\"“”‘’]"
    r"(?:(?!,\s*(?i:what|how|why|any|can|could|does|do|should|is there)\b)[^`\"“”?？，。！])*"
)
# a Markdown quote's marker: "> [rank0]: RuntimeError: ..." is the log line it quotes (">>> "
# stays a Python prompt)
_UNQUOTED = re.compile(r"^\s*>(?!>) ?")
# a Markdown heading: in an issue it is the template's ("### What version are you seeing the
# problem on?", "## Environment"), not the user's question or story
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?;])|(?<=[.])(?=\s)")
_MARKER = r"(?:\d{1,2}[.)、]|[-*•])"  # a list item's number or bullet
_ITEM = re.compile(rf"^\s*{_MARKER}\s+")
_MARKER_ONLY = re.compile(rf"^{_MARKER}$")  # "2." of "... a lot? 2. Where do I ..."


@dataclass(frozen=True)
class Post:
    sentences: tuple[str, ...]  # the prose, a sentence or a list item each, in order
    log: str  # the lines quoted from programs (tracebacks, warnings, code), joined

    @property
    def prose(self) -> str:
        return " ".join(self.sentences)

    @property
    def raised(self) -> str | None:
        """The first line of the log it quotes that says a program raised an exception, else the
        first exception a sentence quotes with its message."""
        found = _RAISED.search(self.log)
        if found:
            return self.log[found.start() :].split("\n", 1)[0].strip()
        quoted = _RAISED_IN_PROSE.search(self.prose)
        return quoted.group(0).strip() if quoted else None


def split_post(text: str) -> Post:
    """The prose sentences of `text` and the log/code it quotes (see the module doc).

    A fenced block is log; so is a paragraph whose first line a program printed (an error's
    message continues on its unindented lines), and any single such line in prose. A Markdown
    heading is neither: it ends a paragraph and is left out."""
    prose_lines: list[str] = []
    log_lines: list[str] = []
    fenced = False
    in_log = False  # inside a paragraph that began as a log
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            in_log = False
            continue
        if fenced:
            log_lines.append(line)
            continue
        if not line.strip() or _HEADING.match(line):
            in_log = False
            prose_lines.append("")
            continue
        if _LOG_LINE.match(_UNQUOTED.sub("", line)) or in_log:
            log_lines.append(line)
            in_log = True
            continue
        prose_lines.append(line)
    sentences: list[str] = []
    paragraph: list[str] = []
    for line in [*prose_lines, ""]:
        if line.strip() and not _ITEM.match(line):
            paragraph.append(line.strip())
            continue
        sentences += _sentences(" ".join(paragraph))
        paragraph = [_ITEM.sub("", line).strip()] if line.strip() else []
    return Post(tuple(sentences), "\n".join(log_lines).strip("\n"))


def _sentences(paragraph: str) -> list[str]:
    parts = (part.strip() for part in _SENTENCE_END.split(paragraph))
    return [part for part in parts if part and not _MARKER_ONLY.match(part)]
