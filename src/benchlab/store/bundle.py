"""Export and import bundles: one JSON file with everything about an experiment, raw values included.

Importing merges results from another machine, so a bundle is untrusted input: it is read
whole into strict models (types, bounds, names a report can show, references that resolve)
and checked against its own embedded spec before the database is touched, then stored in
one transaction, experiment, hosts and runs together, so that a refusal or a `kill -9`
leaves nothing of it behind. It refuses a bundle twice (its id is remembered), a run twice
(run uuids and the run key are unique), a different spec under the same name, and different
workload versions: results of different work are never compared.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from benchlab import stacks
from benchlab.errors import SpecError, StoreError
from benchlab.metrics import Metric
from benchlab.spec.fields import UNIT_MAX, Blob, Label, Line, Name
from benchlab.spec.files import read_capped
from benchlab.spec.load import spec_error
from benchlab.spec.models import MAX_TIMEOUT, Direction, ExperimentSpec, VariantSpec
from benchlab.spec.stored import VERSION_KEY, StoredVersionError, read_stored_spec
from benchlab.store import schema as t
from benchlab.store.documents import HostFacts, RunDetails, Value
from benchlab.store.experiments import experiment_in, insert_experiment
from benchlab.store.hosts import host_row
from benchlab.store.profiles import insert_profiled
from benchlab.store.records import ExperimentData, ExperimentRecord, NewRun, ProfiledRun
from benchlab.store.store import Store, is_unique_violation

BUNDLE_SCHEMA = "benchlab.bundle/1"
BUNDLE_MAX = 1 << 30  # bytes: refused before reading, a bigger file is not worth holding in memory
DETAILS_MAX = 64 * 1024  # a run's details as JSON text
PROFILE_MAX = 128 << 20  # a profiled run's compressed stacks, in base64 characters
TIME_MAX = 1e11  # seconds since 1970 (the year 5138): a larger timestamp is not a time
CLOCK_SKEW_S = 86400.0  # a run that ended later than a day from now on this machine's clock never ran
# units whose values are times, sizes, counts or rates: a negative one was never measured
NOT_NEGATIVE = frozenset({"s", "ms", "us", "ns", "KiB", "B/s", "1/s", "count"})

Timestamp = Annotated[float, Field(ge=0, le=TIME_MAX, allow_inf_nan=False)]
# lower case only, as export writes it: the database's UNIQUE(uuid) compares text, so an upper-cased
# copy of a stored run would be a second run
RunUuid = Annotated[str, Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
BundleId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,35}$")]  # a uuid as export writes it
MetricName = Label  # the schema's column sizes
Unit = Annotated[Line, Field(max_length=UNIT_MAX)]
Version = Annotated[Blob, Field(min_length=1)]  # a Google Benchmark workload's holds its arguments


class Strict(BaseModel):
    """Exact JSON types (no "3" for 3, no true for 1) and no unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class BundleMetric(Strict):
    name: MetricName
    value: Value
    unit: Unit
    direction: Direction

    @model_validator(mode="after")
    def _measurable(self) -> BundleMetric:
        if self.value < 0 and self.unit in NOT_NEGATIVE:
            raise ValueError(f"a value in {self.unit} is never negative ({self.value})")
        return self


class BundleRun(Strict):
    uuid: RunUuid
    workload: Name
    variant: Name
    host: Name
    block: Annotated[int, Field(ge=0, le=100_000)]  # the spec's own bounds on blocks and warm-up rounds
    warmup: bool
    position: Annotated[int, Field(ge=0, lt=2**31)]
    status: Literal["ok", "failed", "timeout"]
    started_at: Timestamp
    ended_at: Timestamp
    exit_code: Annotated[int, Field(ge=-(2**31), lt=2**31)] | None
    message: Blob | None
    stderr_tail: Blob | None
    workload_version: Version
    details: RunDetails | None = None  # older bundles lack them
    metrics: Annotated[list[BundleMetric], Field(max_length=100_000)]

    @model_validator(mode="after")
    def _consistent(self) -> BundleRun:
        if self.ended_at < self.started_at:
            raise ValueError(f"it ended ({self.ended_at}) before it started ({self.started_at})")
        if self.status == "ok" and self.exit_code not in (0, None):
            raise ValueError(f"an ok run exited {self.exit_code}")
        if self.status != "ok" and self.metrics:
            raise ValueError(f"a {self.status} run has no metrics; this one has {len(self.metrics)}")
        if self.details is not None and len(self.details.model_dump_json(exclude_unset=True)) > DETAILS_MAX:
            raise ValueError(f"its details exceed {DETAILS_MAX >> 10} KiB")
        names = [m.name for m in self.metrics]
        twice = next((n for n in names if names.count(n) > 1), None) if len(set(names)) < len(names) else None
        if twice is not None:
            raise ValueError(f"metric '{twice}' appears twice")
        return self


class BundleProfiledRun(Strict):
    """A profiled run (`profile_run`): its stacks as stored, compressed, in base64."""

    uuid: RunUuid
    workload: Name
    variant: Name
    host: Name
    block: Annotated[int, Field(ge=0, le=100_000)]
    position: Annotated[int, Field(ge=0, lt=2**31)]
    status: Literal["ok", "failed", "timeout"]
    started_at: Timestamp
    ended_at: Timestamp
    wall_s: Annotated[float, Field(ge=0, le=MAX_TIMEOUT, allow_inf_nan=False)] | None
    message: Blob | None
    profile: Annotated[str, Field(max_length=PROFILE_MAX)] | None

    @model_validator(mode="after")
    def _consistent(self) -> BundleProfiledRun:
        if self.ended_at < self.started_at:
            raise ValueError(f"it ended ({self.ended_at}) before it started ({self.started_at})")
        if (self.status == "ok") != (self.profile is not None):
            raise ValueError("an ok profiled run has a profile, and only an ok one")
        if self.profile is not None:
            try:
                stacks.decode(base64.b64decode(self.profile, validate=True))
            except (binascii.Error, stacks.DamagedProfile) as exc:
                raise ValueError(f"its profile is damaged: {exc}") from None
        return self

    def as_run(self, host_id: int) -> ProfiledRun:
        """The run as the store keeps it, on `host_id` (the host's row where it is imported)."""
        return ProfiledRun(
            workload=self.workload, variant=self.variant, host_id=host_id, block=self.block, position=self.position,
            status=self.status, started_at=self.started_at, ended_at=self.ended_at, wall_s=self.wall_s,
            message=self.message, profile=base64.b64decode(self.profile) if self.profile is not None else None, uuid=self.uuid,
        )  # fmt: skip


class BundleWorkload(Strict):
    name: Name
    kind: Literal["builtin", "gbench", "command"]
    version: Version


class BundleVariant(Strict):
    name: Name
    config: dict[str, JsonValue]  # checked as a VariantSpec against the spec's variant of that name
    is_baseline: bool


class BundleExperiment(Strict):
    name: Name
    spec: dict[str, JsonValue]  # a stored spec of its version, read as an ExperimentSpec (spec.stored)
    created_at: Timestamp
    workloads: Annotated[list[BundleWorkload], Field(min_length=1)]
    variants: Annotated[list[BundleVariant], Field(min_length=1)]


class Bundle(Strict):
    schema_: Literal["benchlab.bundle/1"] = Field(alias="schema")
    bundle_id: BundleId
    created_at: Timestamp
    experiment: BundleExperiment
    hosts: Annotated[dict[Name, HostFacts], Field(max_length=10_000)]
    runs: list[BundleRun]
    profiled_runs: list[BundleProfiledRun] = []  # bundles written before profiles have none


class CheckedBundle:
    """A bundle that passed every check, with its spec as validated (what is stored)."""

    def __init__(self, bundle: Bundle, spec: ExperimentSpec) -> None:
        self.bundle = bundle
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name


def export_bundle(store: Store, name: str) -> dict[str, Any]:
    exp = store.require_experiment(name)
    data = store.load(exp, every_record=True)
    with store.reading() as conn:
        variants = conn.execute(
            select(t.variant.c.name, t.variant.c.config, t.variant.c.is_baseline)
            .where(t.variant.c.experiment_id == exp.id)
            .order_by(t.variant.c.position)
        ).all()
        kinds = dict(conn.execute(select(t.workload.c.name, t.workload.c.kind).where(t.workload.c.experiment_id == exp.id)).all())
    values = data.run_values()
    identities = store.run_identities(exp)
    metrics = {
        run.id: [
            {"name": name, "value": value, "unit": data.metric_info.get((run.workload, name), ("", "none"))[0],
             "direction": data.metric_info.get((run.workload, name), ("", "none"))[1]}
            for name, value in values[run.id].items()
        ]
        for run in data.records
    }  # fmt: skip
    return {
        "schema": BUNDLE_SCHEMA,
        "bundle_id": str(uuid.uuid4()),
        "created_at": time.time(),
        "experiment": {
            "name": exp.name,
            "spec": exp.spec_document,
            "created_at": exp.created_at,
            "workloads": [{"name": w, "kind": kinds[w], "version": v} for w, v in exp.workload_versions.items()],
            "variants": [{"name": v.name, "config": json.loads(v.config), "is_baseline": bool(v.is_baseline)} for v in variants],
        },
        "hosts": {str(k): v for k, v in {**data.hosts, **_profiled_hosts(store, data)}.items()},
        "profiled_runs": [
            {
                "uuid": r.uuid,
                "workload": r.workload,
                "variant": r.variant,
                "host": str(r.host_id),
                "block": r.block,
                "position": r.position,
                "status": r.status,
                "started_at": r.started_at,
                "ended_at": r.ended_at,
                "wall_s": r.wall_s,
                "message": r.message,
                "profile": base64.b64encode(r.profile).decode() if r.profile is not None else None,
            }  # fmt: skip
            for r in data.profiled
        ],
        "runs": [
            {
                "uuid": identities[r.id][0],
                "workload": r.workload,
                "variant": r.variant,
                "host": str(r.host_id),
                "block": r.block,
                "warmup": r.warmup,
                "position": r.position,
                "status": r.status,
                "started_at": r.started_at,
                "ended_at": r.ended_at,
                "exit_code": r.exit_code,
                "message": r.message,
                "stderr_tail": r.stderr_tail,
                "workload_version": identities[r.id][1],
                "details": r.details,
                "metrics": metrics.get(r.id, []),
            }  # fmt: skip
            for r in data.records
        ],
    }


def _profiled_hosts(store: Store, data: ExperimentData) -> dict[int, dict[str, Any]]:
    """The hosts of profiled runs that no timed run names (a host whose timed runs all failed to
    store cannot be: both are stored by one runner, but a bundle is read as untrusted anyway)."""
    missing = {r.host_id for r in data.profiled} - set(data.hosts)
    if not missing:
        return {}
    with store.reading() as conn:
        rows = conn.execute(select(t.host.c.id, t.host.c.fingerprint).where(t.host.c.id.in_(missing))).all()
    return {row.id: json.loads(row.fingerprint) for row in rows}


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct: with a key twice, which value is meant is not the
    parser's to choose (Python's json would keep the last)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        twice = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise ValueError(f"the key {twice[:60]!r} appears twice in one object")
    return out


def _finite_float(text: str) -> float:
    """JSON's numbers as floats, where 1e400 would silently become infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond the numbers a float holds")
    return value


def read_bundle(path: Path) -> CheckedBundle:
    """The bundle at `path`, wholly checked; any problem is one SpecError naming its place."""
    source = str(path)
    try:
        if path.is_file() and path.stat().st_size > BUNDLE_MAX:
            raise SpecError(f"{source}: larger than {BUNDLE_MAX >> 30} GiB, not read")
        raw = read_capped(path, BUNDLE_MAX)
        if len(raw) > BUNDLE_MAX:
            raise SpecError(f"{source}: larger than {BUNDLE_MAX >> 30} GiB, not read")
        if not raw.strip():
            raise SpecError(f"{source} is empty, not a benchlab bundle")
        data = json.loads(raw.decode(), parse_constant=_no_constant, parse_float=_finite_float, object_pairs_hook=_no_twice)
    except FileNotFoundError:
        raise SpecError(f"no bundle at {source}") from None
    except OSError as exc:
        raise SpecError(f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{source} is not a benchlab bundle: not UTF-8 (byte {exc.start})") from None
    except RecursionError:
        raise SpecError(f"{source} is not a benchlab bundle: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN or Infinity, an integer of thousands of digits
        raise SpecError(f"{source} is not a benchlab bundle: {str(exc)[:200]}") from None
    if not isinstance(data, dict) or data.get("schema") != BUNDLE_SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise SpecError(f"{source} is not a benchlab bundle (schema {str(schema)[:60]!r})")
    try:
        bundle = Bundle.model_validate(data)
    except ValidationError as exc:
        raise spec_error(exc, source) from None
    return CheckedBundle(bundle, _check_references(bundle, source))


def _check_references(bundle: Bundle, source: str) -> ExperimentSpec:
    """What the models cannot see alone: the embedded spec, and everything that must agree with it."""
    info = bundle.experiment
    try:
        spec = read_stored_spec(info.spec)
    except StoredVersionError as exc:
        raise SpecError(str(exc), where=f"{source}: experiment.spec.{VERSION_KEY}") from None
    except ValidationError as exc:
        raise spec_error(exc, source, prefix="experiment.spec.") from None
    if spec.name != info.name:
        raise SpecError(f"the spec is of experiment '{spec.name}'", where=f"{source}: experiment.name")
    kinds = {w.name: w.kind for w in spec.workloads}
    if {w.name: w.kind for w in info.workloads} != kinds or len(info.workloads) != len(kinds):
        raise SpecError(f"not the spec's workloads {sorted(kinds.items())}", where=f"{source}: experiment.workloads")
    if [v.name for v in info.variants] != [v.name for v in spec.variants]:
        raise SpecError(f"not the spec's variants {[v.name for v in spec.variants]}", where=f"{source}: experiment.variants")
    for i, variant in enumerate(info.variants):
        try:
            config = VariantSpec.model_validate(variant.config)
        except ValidationError as exc:
            raise spec_error(exc, source, prefix=f"experiment.variants[{i}].config.") from None
        if config != spec.variants[i] or variant.is_baseline != (variant.name == spec.baseline_name):
            raise SpecError(f"variant '{variant.name}' differs from the spec's", where=f"{source}: experiment.variants[{i}]")
    versions = {w.name: w.version for w in info.workloads}
    variants = {v.name for v in spec.variants}
    blocks = spec.until_decided.max_blocks if spec.until_decided else spec.blocks
    latest = time.time() + CLOCK_SKEW_S
    uuids: set[str] = set()
    keys: set[tuple[str, str, str, int, bool]] = set()
    units: dict[tuple[str, str], tuple[str, str]] = {}
    for i, run in enumerate(bundle.runs):
        where = f"{source}: runs[{i}]"
        _check_names(run, bundle, versions, variants, where)
        if run.workload_version != versions[run.workload]:
            raise SpecError(f"not the version of workload '{run.workload}' in this bundle", where=f"{where}.workload_version")
        if run.block >= (spec.warmup if run.warmup else blocks):
            kind, count = ("warm-up round", spec.warmup) if run.warmup else ("block", blocks)
            raise SpecError(f"{kind} {run.block}, but the spec has {count} (numbered from 0)", where=f"{where}.block")
        if run.ended_at > latest:
            raise SpecError(
                f"ended at {time.strftime('%Y-%m-%d', time.gmtime(run.ended_at))}, in the future", where=f"{where}.ended_at"
            )
        if run.uuid in uuids:
            raise SpecError(f"a second run with uuid {run.uuid}", where=f"{where}.uuid")
        key = (run.host, run.workload, run.variant, run.block, run.warmup)
        if key in keys:
            raise SpecError(f"a second run of {run.workload}/{run.variant} block {run.block} on host {run.host}", where=where)
        uuids.add(run.uuid)
        keys.add(key)
        for j, metric in enumerate(run.metrics):
            first = units.setdefault((run.workload, metric.name), (metric.unit, metric.direction))
            if first != (metric.unit, metric.direction):
                raise SpecError(
                    f"metric '{metric.name}' of workload '{run.workload}' is in {first[0]!r} ({first[1]}) in other runs",
                    where=f"{where}.metrics[{j}]",
                )
    _check_profiled(bundle, source, versions, variants, blocks, uuids)
    return spec


def _check_names(
    run: BundleRun | BundleProfiledRun, bundle: Bundle, versions: dict[str, str], variants: set[str], where: str
) -> None:
    """A run names a host of the bundle and a workload and variant of its experiment."""
    if run.host not in bundle.hosts:
        raise SpecError(f"no host '{run.host}' among the bundle's hosts", where=f"{where}.host")
    if run.workload not in versions:
        raise SpecError(f"no workload '{run.workload}' in the experiment", where=f"{where}.workload")
    if run.variant not in variants:
        raise SpecError(f"no variant '{run.variant}' in the experiment", where=f"{where}.variant")


def _check_profiled(
    bundle: Bundle, source: str, versions: dict[str, str], variants: set[str], blocks: int, uuids: set[str]
) -> None:
    """A profiled run names a host, workload and variant of the bundle, a block of its plan, and a
    uuid and key of its own."""
    keys: set[tuple[str, str, str, int]] = set()
    for i, run in enumerate(bundle.profiled_runs):
        where = f"{source}: profiled_runs[{i}]"
        _check_names(run, bundle, versions, variants, where)
        if run.block >= blocks:
            raise SpecError(f"block {run.block}, but the spec has {blocks} (numbered from 0)", where=f"{where}.block")
        key = (run.host, run.workload, run.variant, run.block)
        if run.uuid in uuids or key in keys:
            raise SpecError(
                f"a second profiled run of {run.workload}/{run.variant} block {run.block}, or a uuid twice", where=where
            )
        uuids.add(run.uuid)
        keys.add(key)


def _target_experiment(conn: Connection, checked: CheckedBundle) -> ExperimentRecord:
    """The experiment to merge into, created in the import's transaction where it is new."""
    info, spec = checked.bundle.experiment, checked.spec.model_dump(mode="json")
    existing = experiment_in(conn, info.name)
    if existing is None:
        return insert_experiment(
            conn,
            name=info.name,
            spec=spec,
            workloads=[(w.name, w.kind, w.version) for w in info.workloads],
            variants=[(v.name, v.model_dump(mode="json"), v.name == checked.spec.baseline_name) for v in checked.spec.variants],
            created_at=info.created_at,
        )
    if existing.spec_document != spec:
        raise StoreError(f"experiment '{info.name}' here has a different spec than the bundle's; refusing to mix them")
    mismatched = [w.name for w in info.workloads if existing.workload_versions.get(w.name) != w.version]
    if mismatched:
        raise StoreError(f"workload version mismatch for {', '.join(mismatched)}: results of different work are never compared")
    return existing


def import_bundle(store: Store, checked: CheckedBundle) -> tuple[str, int]:
    """Merges a checked bundle in one transaction; returns (experiment name, runs added)."""
    bundle = checked.bundle
    try:
        with store.transaction() as conn:
            if conn.execute(select(t.bundle_import).where(t.bundle_import.c.bundle_id == bundle.bundle_id)).first():
                raise StoreError(f"bundle {bundle.bundle_id} was already imported")
            exp = _target_experiment(conn, checked)
            _insert_runs(store, conn, exp, bundle)
            conn.execute(
                insert(t.bundle_import).values(bundle_id=bundle.bundle_id, experiment_id=exp.id, imported_at=time.time())
            )
    except IntegrityError as exc:
        if is_unique_violation(exc):
            raise StoreError("the bundle holds runs that are already stored here; nothing was imported") from None
        raise SpecError(f"the bundle does not fit this database ({str(exc.orig)[:200]}); nothing was imported") from None
    return checked.name, len(bundle.runs)


def _insert_runs(store: Store, conn: Connection, exp: ExperimentRecord, bundle: Bundle) -> None:
    """The bundle's runs, their hosts, metrics and details, in the caller's transaction, through
    the insert path live runs take."""
    used = {run.host for run in bundle.runs} | {run.host for run in bundle.profiled_runs}
    host_ids = {key: host_row(conn, host_facts(facts))[0] for key, facts in bundle.hosts.items() if key in used}
    runs = [
        NewRun(
            workload=run.workload,
            variant=run.variant,
            host_id=host_ids[run.host],
            block=run.block,
            warmup=run.warmup,
            position=run.position,
            status=run.status,
            started_at=run.started_at,
            ended_at=run.ended_at,
            metrics=[Metric(m.name, m.value, m.unit, m.direction) for m in run.metrics],
            exit_code=run.exit_code,
            message=run.message,
            stderr_tail=run.stderr_tail,
            details=run_details(run),
            uuid=run.uuid,
        )  # fmt: skip
        for run in bundle.runs
    ]
    store.runs.insert(conn, exp, runs)
    for p in bundle.profiled_runs:
        insert_profiled(conn, exp, p.as_run(host_ids[p.host]), retry=False)


def host_facts(facts: HostFacts) -> dict[str, Any]:
    """A fingerprint as it was written: the facts the bundle holds, no defaults added."""
    return facts.model_dump(exclude_unset=True)


def run_details(run: BundleRun) -> dict[str, Any] | None:
    """A run's details as they were written, no defaults added."""
    return run.details.model_dump(mode="json", exclude_unset=True) if run.details else None
