"""The interview's state: facts, the questions answered so far, going back.

Pure: no terminal, no prompts, no printing. `session.py` asks the questions and shows the
answers; this module decides nothing about DDP either, it loops `engine.next_question` ->
`engine.apply_answer` and hands the facts to `engine.diagnose`. Tests drive it directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..reasoning import engine
from ..reasoning.engine import AskedQuestion


def default_family(kb) -> str:
    """The error assumed when nothing was pasted (causes.yaml `engine: default_family`)."""
    return kb.engine["default_family"]


def error_quoted(kb, text: str):
    """The triage of a description that quotes a known error or warning ("I get Expected to
    mark a variable ready only once when ..."), None when it holds none (then it tells of the
    usual error)."""
    from ..reading.triage import triage_text

    found = triage_text(kb, text, "<description>")
    return found if found.findings else None


@dataclass(frozen=True)
class Step:
    """One answered question and the facts before it (what `back` restores)."""

    asked: AskedQuestion
    value: str
    facts_before: Mapping[str, Any]


@dataclass
class Interview:
    """Everything the session knows so far; mutated only through its methods."""

    kb: Any
    facts: dict[str, Any]
    modules: tuple[str, ...] = ()
    triage: Any = None  # the TriageResult of the paste, if any
    paste: str | None = None  # pasted text (the session may save it)
    paste_path: str | None = None  # given with --paste: reused, never copied
    description: str = ""
    text_facts: dict[str, Any] = field(default_factory=dict)
    # details typed after the report whose facts were taken (follow-ups): the answers file
    # keeps them, with the description, to replay the facts in the session's order
    said_later: list[str] = field(default_factory=list)
    history: list[Step] = field(default_factory=list)

    @classmethod
    def start(
        cls, kb, triage=None, paste: str | None = None, paste_path: str | None = None
    ) -> Interview:
        """Begin from a triage result (or nothing): its facts, else the default family."""
        if triage is not None and triage.findings:
            facts = dict(triage.facts)
        else:
            facts = {"family": default_family(kb)}
        modules = tuple(triage.unused_modules) if triage is not None else ()
        return cls(kb, facts, modules, triage, paste, paste_path)

    @property
    def found_error(self) -> bool:
        return self.triage is not None and bool(self.triage.findings)

    @property
    def answers(self) -> dict[str, str]:
        return {step.asked.key: step.value for step in self.history}

    @property
    def can_go_back(self) -> bool:
        return bool(self.history)

    @property
    def number(self) -> int:
        """The number of the next question (1-based)."""
        return len(self.history) + 1

    def describe(self, text: str) -> dict[str, Any]:
        """Take the user's sentence; returns the facts it set ({} if none)."""
        text = text.strip()
        if not text:
            return {}
        from .readers import beside_an_error, facts_with_leans

        self.description = text
        if not self.found_error:
            self.take_quoted_error(text)
        found = engine.facts_from_text(self.kb, text)
        # and how near the story is to each cause's reports: it moves the ranking, yet it is
        # no fact the user stated, so it is not among what the session says it understood
        with_leans = beside_an_error(self.found_error, facts_with_leans(self.kb, found, text))
        if with_leans:
            self.text_facts = with_leans
            self.facts.update(with_leans)
        return found

    def take_quoted_error(self, text: str) -> None:
        """The error a description quotes ("I get Expected to mark a variable ready only
        once when ..."), taken as if pasted: its family, not the usual one, is diagnosed."""
        quoted = error_quoted(self.kb, text)
        if quoted is not None:
            self.triage = quoted
            self.facts.update(quoted.facts)
            self.modules = tuple(quoted.unused_modules)

    def next_question(self) -> AskedQuestion | None:
        answered = [step.asked.key for step in self.history]
        unsure = [step.asked.key for step in self.history if step.value == engine.UNSURE]
        return engine.next_question(
            self.kb, self.facts, answered, self.modules, len(self.history), unsure=unsure
        )

    def answer(self, asked: AskedQuestion, value: str) -> None:
        updated = engine.apply_answer(self.facts, asked, value)
        if updated is None:  # cannot happen from the session: the choices are the options
            updated = dict(self.facts)
        self.history.append(Step(asked, value, dict(self.facts)))
        # what the description was read to say gives way to an answer that contradicts it
        self.facts = engine.answers_win(self.kb, updated, self.text_facts, self.answers)

    def back(self) -> None:
        """Undo the last answer."""
        last = self.history.pop()
        self.facts = dict(last.facts_before)

    def diagnose(self):
        return engine.diagnose(self.kb, self.triage, self.facts, self.answers)

    def readings_to_confirm(self) -> list[tuple[AskedQuestion, Any]]:
        """(question, the option read) for what the description answered and the advice
        rests on: asked back before the report, as a misreading there would become advice."""
        from ..reasoning.readings import advice_rests_on

        said = advice_rests_on(self.kb, self.triage, self.facts, self.answers, self.text_facts)
        return [(AskedQuestion(question, question.id), option) for question, option in said]

    def follow_up(self, text: str, lang: str) -> FollowUp:
        """A line typed after the report: a question about a fix gets its answer; a detail
        ("I use Lightning", "actually I freeze after 5 epochs") changes the facts, the later
        word winning over what was said before."""
        from .ask import build_answer
        from .readers import read_question

        got = read_question(self.kb, text)  # the lexicon and the nearest examples
        understood = got.understood
        # after a report, a statement is a detail for it ("I already set
        # find_unused_parameters=True and still get it" turns the flag on and re-ranks), even
        # where `ask` alone would answer it as a "still fails" question
        answer = (
            build_answer(self.kb, understood, lang, self.facts) if understood.is_question else None
        )
        if answer is not None or (understood.is_question and got.candidates):
            return FollowUp(understood, answer, {}, got.candidates)
        changed = {k: v for k, v in understood.facts.items() if self.facts.get(k) != v}
        self.facts.update(changed)
        self.text_facts.update(changed)
        if changed:
            self.said_later.append(text.strip())
        return FollowUp(understood, None, changed)


@dataclass(frozen=True)
class FollowUp:
    """What a follow-up line did: an answer, or the facts it changed (both empty: nothing)."""

    understood: Any
    answer: Any  # ask.Answer or None
    changed: Mapping[str, Any]
    # the readings to offer when the question was not clear (retrieve.Choice, the answered
    # one first); the session asks which one with one keypress
    candidates: tuple[Any, ...] = ()

    def choose(self, kb, choice, lang: str, facts: Mapping[str, Any]):
        """The answer to the reading the user picked among `candidates`."""
        from .ask import build_answer
        from .readers import choose

        return build_answer(kb, choose(self.understood, choice), lang, facts)
