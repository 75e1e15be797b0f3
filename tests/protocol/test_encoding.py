"""The one JSON encoder (``protocol.encoding``): every value encodes, to valid UTF-8 that reads back as the value;
the standard-library path writes orjson's bytes; text that is not valid Unicode is escaped one way on every path."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from protocol.encoding import compact, compact_stdlib, line, model_json

_TEXT = st.text() | st.text(max_size=8).map(lambda text: text + "\ud800") | st.sampled_from(["\udfff", "a\udc80b"])
_KEYS = st.text(max_size=12) | st.just("key\udc80")
_SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**100), max_value=2**100) | _TEXT
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4))
_FLOATS = st.floats(allow_nan=True, allow_infinity=True)


def _read(data: bytes) -> Any:
    """What a client reads back: strict UTF-8, then JSON (the standard parser takes surrogate escapes)."""
    return json.loads(data.decode("utf-8"))


@given(_VALUES)
def test_every_value_encodes_to_utf8_that_reads_back_as_itself(value: Any) -> None:
    encoded = compact(value)
    assert _read(encoded) == value
    assert b"\n" not in encoded and line(value) == encoded + b"\n"


@given(_VALUES)
def test_the_standard_library_path_writes_the_same_bytes(value: Any) -> None:
    assert compact_stdlib(value) == compact(value)


@given(st.lists(_FLOATS, max_size=6))
def test_non_finite_numbers_are_null_on_both_paths(values: list[float]) -> None:
    expected = [value if math.isfinite(value) else None for value in values]
    assert _read(compact(values)) == expected
    assert _read(compact_stdlib(values)) == expected
    assert _read(compact([*values, "\ud800"]))[:-1] == expected  # the fallback, forced by a lone surrogate


def test_a_lone_surrogate_is_escaped_and_nothing_else_is() -> None:
    assert compact({"é": "\ud800✓"}) == '{"é":"\\ud800✓"}'.encode()
    assert compact_stdlib(["\udfff", 2**70]) == b'["\\udfff",1180591620717411303424]'


class _Model(BaseModel):
    text: str
    number: float | None = None


@given(_TEXT, st.floats(allow_nan=False, allow_infinity=False) | st.none())
def test_a_model_encodes_as_its_dump_through_the_encoder(text: str, number: float | None) -> None:
    model = _Model(text=text, number=number)
    assert _read(model_json(model)) == model.model_dump(mode="json")
