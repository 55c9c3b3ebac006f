"""Records (common/record.py) behave as frozen dataclasses do: their __init__ is made
without compiling source (issue 23), and must still bind arguments exactly as a written
`def __init__(self, x, y="d", z=<factory>)` would."""

from __future__ import annotations

import pytest
from ddp_doctor.common.record import FrozenInstanceError, field, record, replace


@record
class Sample:
    x: int
    y: str = "d"
    z: dict = field(default_factory=dict)


@record
class Empty:
    pass


@record(frozen=False)
class Mutable:
    value: int


def test_positional_keyword_and_default_arguments_bind_like_a_written_init():
    assert Sample(1) == Sample(x=1) == Sample(1, "d") == Sample(1, y="d", z={})
    assert Sample(1, "e", {"k": 1}).__dict__ == {"x": 1, "y": "e", "z": {"k": 1}}
    assert list(Sample(2, z={}, y="f").__dict__) == ["x", "y", "z"]  # field order
    assert repr(Sample(1)) == "Sample(x=1, y='d', z={})"


def test_a_factory_makes_a_fresh_value_for_every_instance():
    first, second = Sample(1), Sample(1)
    assert first.z == {} and first.z is not second.z
    given = {"k": 1}
    assert Sample(1, z=given).z is given


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Sample(), "missing 1 required positional argument: 'x'"),
        (lambda: Sample(1, "y", {}, 4), "positional arguments but 5 were given"),
        (lambda: Sample(1, x=2), "got multiple values for argument 'x'"),
        (lambda: Sample(1, w=2), "got an unexpected keyword argument 'w'"),
    ],
)
def test_wrong_arguments_raise_the_usual_type_errors(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_frozen_records_refuse_assignment_and_hash_by_value():
    sample = Sample(1, "e")
    with pytest.raises(FrozenInstanceError):
        sample.x = 2
    assert hash(Sample(1, "e", ())) == hash(Sample(1, "e", ()))
    assert replace(sample, y="q") == Sample(1, "q")
    assert Empty() == Empty() and repr(Empty()) == "Empty()"


def test_a_mutable_record_can_change():
    item = Mutable(1)
    item.value = 2
    assert item == Mutable(2)


def test_a_field_named_self_is_refused():
    with pytest.raises(TypeError):

        @record
        class Bad:
            self: int
