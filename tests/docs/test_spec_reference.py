"""docs/spec.md is generated from the spec's models and must match them, so it can never drift."""

from __future__ import annotations

import subprocess
import sys

from benchlab.spec.models import ExperimentSpec
from benchlab.spec.reference import json_schema, render
from tests.docs.doc_commands import ROOT

SPEC_MD = ROOT / "docs" / "spec.md"


def test_spec_reference_matches_the_models() -> None:
    assert SPEC_MD.read_text() == render(), (
        "docs/spec.md differs from the models: regenerate it with `python -m benchlab.spec.reference > docs/spec.md`"
    )


def test_the_module_writes_the_reference() -> None:
    proc = subprocess.run([sys.executable, "-m", "benchlab.spec.reference"], capture_output=True, text=True, check=True)
    assert proc.stdout == render()


def test_every_field_has_a_description_and_appears() -> None:
    """A field added without a description, or left out of the reference, fails here."""
    text = render()
    schema = json_schema(ExperimentSpec)
    for model in [schema, *schema["$defs"].values()]:
        for key, prop in model["properties"].items():
            assert prop.get("description"), f"{model['title']}.{key} has no description (give it a docstring)"
            assert f"| `{key}` |" in text


def test_bounds_and_defaults_come_from_the_schema() -> None:
    text = render()
    assert "| `blocks` | integer (>= 2 and <= 100000) | `10` |" in text
    assert '| `correction` | one of `"bh"`, `"holm"`, `"none"` | `"bh"` |' in text
    assert "## `variants[N].environment`" in text and "## `sweep.parameters[N].range`" in text
