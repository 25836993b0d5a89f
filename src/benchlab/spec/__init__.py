"""Experiment specs: models, reading spec files, validation and the spec-free quick form."""

from benchlab.spec.load import read_spec
from benchlab.spec.models import ExperimentSpec, VariantSpec, WorkloadSpec
from benchlab.spec.validate import spec_from_dict

__all__ = ["ExperimentSpec", "VariantSpec", "WorkloadSpec", "read_spec", "spec_from_dict"]
