"""Strict types, with one documented conversion: a finite number given to `env` or `knobs` is the
text a shell would write (`env = { Z = 1 }` sets Z to "1"); anything else that is not text is
refused, as docs/bad-input.md and docs/spec.md say."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchlab.spec.models import VariantSpec


@pytest.mark.parametrize(("given", "text"), [(1, "1"), (-3, "-3"), (0.5, "0.5"), ("06", "06")])
def test_a_number_is_written_as_its_text(given: object, text: str) -> None:
    variant = VariantSpec.model_validate({"name": "v", "env": {"Z": given}, "knobs": {"/proc/sys/vm/swappiness": given}})
    assert variant.env == {"Z": text} and variant.knobs == {"/proc/sys/vm/swappiness": text}


@pytest.mark.parametrize("given", [True, float("inf"), float("nan"), [1], {"a": 1}])
@pytest.mark.parametrize("field", ["env", "knobs"])
def test_anything_else_that_is_not_text_is_refused(field: str, given: object) -> None:
    key = "Z" if field == "env" else "/proc/sys/vm/swappiness"
    with pytest.raises(ValidationError, match=rf"{field}\."):
        VariantSpec.model_validate({"name": "v", field: {key: given}})
