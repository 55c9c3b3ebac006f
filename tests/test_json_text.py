"""json_text.indented writes what `json.dumps(ensure_ascii=False, indent=2)` writes."""

from __future__ import annotations

import json
import random
import re

import pytest
from ddp_doctor.common.json_text import Unwritten, indented
from ddp_doctor.output.render import SENTENCE_END, _first_sentence

_CHARS = ["a", '"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "中", "\u2028", "\ud800", " ", "\t"]
_CHARS += ["\b", "\f", "\r", "\u3000", "…"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 6)))


def _value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        scalars = [None, True, False, 0, -5, 10**20, 1.5, 1e-7, 3.0, float("nan"), float("inf")]
        return rng.choice([*scalars, -float("inf"), _text(rng)])
    if roll < 0.6:
        items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return items if rng.random() < 0.5 else tuple(items)
    return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def test_indented_is_json_dumps_on_random_values():
    rng = random.Random(23)
    for _ in range(5000):
        value = _value(rng)
        assert indented(value) == json.dumps(value, ensure_ascii=False, indent=2)


@pytest.mark.parametrize("value", [{1: "a"}, {None: 1}, object(), {"a": {1, 2}}])
def test_what_it_does_not_write_is_left_to_json(value):
    with pytest.raises(Unwritten):
        indented(value)


def test_first_sentence_is_the_regex_split():
    rng = random.Random(8)
    alphabet = list("ab .!?。！？\u3000\t\n x.y")
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _first_sentence(text) == re.split(SENTENCE_END, text.strip(), maxsplit=1)[0]
