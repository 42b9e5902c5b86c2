"""rustjson: numbers and JSON as serde_json (zmij floats, no preserve_order) prints them,
so the verbs copied from the Rust CLI print its bytes."""

import pytest

from bloomcast_client.rustjson import dumps, rust_float


@pytest.mark.parametrize("value, printed", [
    (2.0, "2.0"), (0.0, "0.0"), (-0.0, "-0.0"), (0.5, "0.5"),
    (0.00001234, "0.00001234"), (1e-6, "1e-6"), (1.234e-7, "1.234e-7"),
    (1e15, "1000000000000000.0"), (1e16, "1e+16"), (1.5e16, "1.5e+16"),
    (0.0007302823758519961, "0.0007302823758519961"), (5e-324, "5e-324"),
])
def test_floats_print_as_serde_json_prints_them(value, printed):
    assert rust_float(value) == printed


def test_json_is_compact_with_sorted_keys_raw_utf8_and_null_for_nan():
    doc = {"b": [1, 2.0, float("nan"), float("inf")], "a": 'é\n"', "c": None, "d": True}
    assert dumps(doc) == '{"a":"é\\n\\"","b":[1,2.0,null,null],"c":null,"d":true}'
