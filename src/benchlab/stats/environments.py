"""One experiment's results from several machines side by side: runs merged with
`benchlab import` from hosts benchlab cannot reach, or run on a remote host over ssh.

Each variant on each host becomes a column of its own, labelled `variant@host`, and is
judged against the reference host's baseline variant. Runs on different machines are
never paired (their blocks did not share a moment): their change is the two-sample
Hodges-Lehmann shift, tested with Mann-Whitney, as the design fixes for merged hosts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from benchlab.errors import SpecError
from benchlab.store import ExperimentData


def host_labels(hosts: dict[int, dict[str, Any]]) -> dict[int, str]:
    """Host id -> its hostname, with the id added where two hosts share a name."""
    names = {host_id: str(fp.get("hostname") or f"host{host_id}") for host_id, fp in hosts.items()}
    shared = {n for n, c in Counter(names.values()).items() if c > 1}
    return {host_id: f"{n}#{host_id}" if n in shared else n for host_id, n in names.items()}


def used_hosts(data: ExperimentData, variant: str | None = None) -> list[int]:
    """Hosts that ran something (of `variant`), the one that ran most first."""
    return [host for host, _ in Counter(r.host_id for r in data.runs if variant in (None, r.variant)).most_common()]


def split_by_host(data: ExperimentData, baseline: str, reference: str | None) -> tuple[ExperimentData, str]:
    """The data with every run's variant renamed `variant@host`, and the label of the
    reference column: `baseline@reference` (default: the host that ran the baseline most)."""
    labels = host_labels(data.hosts)
    hosts = used_hosts(data)
    if reference is None:
        reference = labels[(used_hosts(data, baseline) or hosts)[0]]
    elif reference not in {labels[h] for h in hosts}:
        known = ", ".join(labels[h] for h in hosts)
        raise SpecError(f"no host named '{reference}' ran this experiment (hosts: {known})", where="--reference")
    ordered = sorted(hosts, key=lambda h: labels[h] != reference)  # the reference host's columns first
    columns = [f"{v}@{labels[h]}" for v in data.experiment.variant_ids for h in ordered]
    present = {f"{r.variant}@{labels[r.host_id]}" for r in data.runs}
    variant_ids = {label: i for i, label in enumerate(c for c in columns if c in present)}
    runs = [dataclasses.replace(r, variant=f"{r.variant}@{labels[r.host_id]}") for r in data.runs]
    experiment = dataclasses.replace(data.experiment, variant_ids=variant_ids)
    return dataclasses.replace(data, experiment=experiment, runs=runs), f"{baseline}@{reference}"
