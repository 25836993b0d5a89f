"""Experiment specs: models, TOML loading and the spec-free quick form."""

from benchlab.spec.load import load_spec, spec_from_dict
from benchlab.spec.models import ExperimentSpec, VariantSpec, WorkloadSpec

__all__ = ["ExperimentSpec", "VariantSpec", "WorkloadSpec", "load_spec", "spec_from_dict"]
