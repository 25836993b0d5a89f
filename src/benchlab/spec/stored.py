"""An experiment's spec as stored: the JSON object in a results database's experiment row and in a
bundle's `experiment.spec`, read back as the spec model once, where it is read.

What reads a stored experiment (a report, a diff, a resume, a fleet's worker) meets one typed
shape, `ExperimentSpec`, whatever release wrote it. The shape is versioned (docs/storage.md):

- version 1 is the shape every release so far has written, `ExperimentSpec.model_dump(mode="json")`,
  with no `version` key (a document that says `"version": 1` is read the same);
- a later shape will write `"version": N`, and a step in `MIGRATIONS` will turn version N-1 into
  N, so an older document is brought up to the current shape here, in one place, before it is
  validated; a version newer than this release reads is refused, never guessed at.

The document itself is kept as stored beside the model (`ExperimentRecord.spec_document`): it is
what the spec's digest is of, what a bundle carries and `show` prints, names as they were written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from benchlab.spec.load import shown
from benchlab.spec.models import ExperimentSpec

STORED_SPEC_VERSION = 1  # the shape this release writes and reads; bump it with a step in MIGRATIONS
VERSION_KEY = "version"
# version N's document -> version N+1's, each written once and kept: a database or bundle of any
# earlier release must open. None yet: every release so far wrote version 1.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class StoredVersionError(Exception):
    """A stored spec's `version` that this release cannot read: not a version, or a newer one."""


def stored_version(document: Mapping[str, Any]) -> int:
    """The shape a stored spec is in: its `version`, 1 where it has none (every earlier release)."""
    version = document.get(VERSION_KEY, 1)
    if type(version) is not int or version < 1:
        raise StoredVersionError(f"version {shown(version)} is not a spec version (a whole number from 1)")
    if version > STORED_SPEC_VERSION:
        raise StoredVersionError(
            f"version {version} was written by a newer benchlab: this one reads versions 1 to {STORED_SPEC_VERSION} "
            "(upgrade benchlab to read it)"
        )
    return version


def read_stored_spec(document: Mapping[str, Any]) -> ExperimentSpec:
    """A stored spec of any version this release knows, migrated to the current shape and
    validated by the spec model's own rules. Raises StoredVersionError for its version, and
    pydantic's ValidationError for its shape: the caller places either (a database row, a
    bundle's field) in a one-line error."""
    version = stored_version(document)
    current = {k: v for k, v in document.items() if k != VERSION_KEY}
    for step in range(version, STORED_SPEC_VERSION):
        current = MIGRATIONS[step](current)
    return ExperimentSpec.model_validate(current)
