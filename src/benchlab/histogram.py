"""The probe's one latency-histogram grid, as an IPC run keeps its samples in its details: read by
the probe's document model (`workloads/probe.py`) when a run is stored, and by the HTML report
when it adds a variant's runs up. At the bottom of the stack so that both read one definition,
and a renderer reads no workload code."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, model_validator

HISTOGRAM_PER_OCTAVE = 8  # the probe's `histogram::PER_OCTAVE`: bucket k is [2^(k/8), 2^((k+1)/8)) ns
HISTOGRAM_BUCKETS = 64 * HISTOGRAM_PER_OCTAVE  # the probe's `histogram::BUCKETS`: every u64 in one


class Histogram(BaseModel):
    """One benchmark entry's samples counted per bucket: `counts[i]` is bucket `first + i`."""

    first: Annotated[int, Field(ge=0, lt=HISTOGRAM_BUCKETS)]
    counts: Annotated[list[Annotated[int, Field(ge=0, lt=2**63)]], Field(min_length=1)]  # the probe's u64, as numpy adds them

    @model_validator(mode="after")
    def _on_the_grid(self) -> Histogram:
        if self.first + len(self.counts) > HISTOGRAM_BUCKETS:
            raise ValueError(f"a histogram reaches past bucket {HISTOGRAM_BUCKETS - 1}")
        return self


HistogramsOf = dict[Annotated[str, Field(max_length=200)], Histogram]  # a run's histograms per benchmark entry
