"""One experiment's results from several machines side by side: runs merged with
`benchlab import` from hosts benchlab cannot reach, or run on a remote host over ssh.

Each variant on each machine becomes a column of its own, labelled `variant@host`, and is
judged against the reference machine's baseline variant. Runs on different machines are
never paired (their blocks did not share a moment): their change is the two-sample
Hodges-Lehmann shift, tested with Mann-Whitney, as the design fixes for merged hosts.

A virtual machine's guest is a host of its own in the store (its kernel is what it
measures), but not another machine: its runs interleave with the native runs of the
machine that booted it, block by block, so they are paired with them (`on_machines`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, cast

import numpy as np

from benchlab.errors import SpecError
from benchlab.store import ExperimentData, host_digest


def host_labels(hosts: dict[int, dict[str, Any]]) -> dict[int, str]:
    """Host id -> its hostname, with the id added where two hosts share a name."""
    names = {host_id: str(fp.get("hostname") or f"host{host_id}") for host_id, fp in hosts.items()}
    shared = {n for n, c in Counter(names.values()).items() if c > 1}
    return {host_id: f"{n}#{host_id}" if n in shared else n for host_id, n in names.items()}


def machine_of(hosts: dict[int, dict[str, Any]]) -> dict[int, int]:
    """Host id -> the id of the machine it ran on. A guest's fingerprint names the machine that
    booted it (`guest_of`, that host's identity digest); guests of one machine whose host did not
    run this experiment itself share the first of them."""
    machines: dict[str, int] = {host_digest(fp): h for h, fp in sorted(hosts.items()) if not fp.get("guest_of")}
    found: dict[int, int] = {}
    for h, fp in sorted(hosts.items()):
        key = str(fp.get("guest_of") or host_digest(fp))
        found[h] = machines.setdefault(key, h)
    return found


def on_machines(data: ExperimentData) -> ExperimentData:
    """The data with each run's host replaced by its machine (`machine_of`), so that a guest's
    runs pair with the native runs of their blocks; stored run records keep their own host."""
    machine = machine_of(data.hosts)
    if all(h == m for h, m in machine.items()):
        return data
    table = data.runs
    mapped = np.array([machine.get(h, h) for h in cast(list[int], table.host_id.tolist())], dtype=np.int64)
    return dataclasses.replace(data, runs=dataclasses.replace(table, host_id=mapped))


def used_hosts(data: ExperimentData, variant: str | None = None) -> list[int]:
    """Hosts that ran something (of `variant`), the one that ran most first (of as many, the first to run)."""
    runs = data.runs
    hosts = runs.host_id if variant is None else runs.host_id[runs.variant == runs.variants.index(variant)]
    found, first, counts = np.unique(hosts, return_index=True, return_counts=True)
    return [int(found[i]) for i in np.lexsort((first, -counts))]


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
    table = data.runs
    place = {h: i for i, h in enumerate(ordered)}
    host_place = np.array([place[h] for h in cast(list[int], table.host_id.tolist())], dtype=np.int64)
    column = table.variant * len(ordered) + host_place  # as listed below: variant by variant, host by host
    present = set(np.unique(column).tolist())
    listed = [(i * len(ordered) + j, f"{v}@{labels[h]}") for i, v in enumerate(table.variants) for j, h in enumerate(ordered)]
    kept = [(c, label) for c, label in listed if c in present]
    renumber = np.zeros(len(listed), dtype=np.int64)
    renumber[[c for c, _ in kept]] = np.arange(len(kept))
    variants = [label for _, label in kept]
    runs = dataclasses.replace(table, variant=renumber[column], variants=variants)
    machine = machine_of(data.hosts)
    records = [dataclasses.replace(r, variant=f"{r.variant}@{labels[machine.get(r.host_id, r.host_id)]}") for r in data.records]
    experiment = dataclasses.replace(data.experiment, variant_ids={label: i for i, label in enumerate(variants)})
    return dataclasses.replace(data, experiment=experiment, runs=runs, records=records), f"{baseline}@{reference}"
