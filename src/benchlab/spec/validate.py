"""A spec's data, from a file or built by a command, turned into the experiment it describes."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from benchlab.spec.load import spec_error
from benchlab.spec.models import ExperimentSpec
from benchlab.spec.sweep import expand_sweep


def spec_from_dict(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    """The sweep expanded, then the whole validated. A `suite` section must already be expanded
    (`benchlab.suite.cpu.expand_spec`): its workloads are the suite's data, a layer above specs."""
    try:
        return ExperimentSpec.model_validate(expand_sweep(data, source))
    except ValidationError as exc:
        raise spec_error(exc, source) from None
