"""Executing a plan: per planned run, apply the variant, start the workload,
wait for it, collect metrics and commit the run before the next one starts.

The runner never computes statistics. Its clock, executor, knob journal and
progress display are injected, so planning and storage can be tested without
real timing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from benchlab.errors import AlreadyStored, EnvironmentProblem, Interrupted, SpecError, StoreError, WorkloadFailed
from benchlab.measure.cgroup import clear_stale_runs
from benchlab.measure.guest import GuestExecutor
from benchlab.measure.host import fingerprint, machine_state
from benchlab.measure.process import STDOUT_LIMIT_BYTES, Executor, Finished
from benchlab.measure.remote import RemoteExecutor
from benchlab.measure.rusage import usage_metrics
from benchlab.measure.sampler import HARDWARE_COUNTERS, Sampler, hardware_cycles, perf_path, scratch
from benchlab.measure.served import ServedExecutor
from benchlab.metrics import RESERVED
from benchlab.plan import PlannedRun, make_plan
from benchlab.spec.models import ExperimentSpec, UntilDecided, WorkloadSpec
from benchlab.stacks import encode
from benchlab.store import ExperimentRecord, Store, spec_digest
from benchlab.store.records import NewRun, ProfiledRun
from benchlab.variants import PreparedVariant
from benchlab.variants.allocator import allocator_complaint
from benchlab.variants.background import background_load
from benchlab.variants.knobs import KnobJournal, MachineLock, Restoration
from benchlab.variants.shim import FINDING, shim_findings
from benchlab.workloads import Workload, check_fits, resolve_workload
from benchlab.workloads.probe import ProbeWorkload
from benchlab.workloads.steps import run_step


@dataclass(frozen=True)
class Prepared:
    """A spec checked against this machine: every binary, library, CPU and knob resolved."""

    spec: ExperimentSpec
    workloads: dict[str, Workload]
    variants: dict[str, PreparedVariant]

    @classmethod
    def from_spec(cls, spec: ExperimentSpec) -> Prepared:
        stepped = [w.name for w in spec.workloads if w.setup or w.clean]
        remote = [v.name for v in spec.variants if v.environment.kind in ("ssh", "vm")]
        if stepped and remote:
            raise SpecError(
                f"workload {stepped[0]} has setup/clean steps, which run on this machine, "
                f"and variant {remote[0]} runs elsewhere (another host or a guest)"
            )
        workloads = {w.name: resolve_workload(w, f"workloads[{i}]") for i, w in enumerate(spec.workloads)}
        for i, workload in enumerate(workloads.values()):
            _check_metric_settings(workload, f"workloads[{i}].metrics")
        variants = {v.name: PreparedVariant.prepare(v, f"variants[{i}]") for i, v in enumerate(spec.variants)}
        local = [
            (f"variants[{i}]", v.cpus) for i, v in enumerate(variants.values()) if v.spec.environment.kind not in ("ssh", "vm")
        ]
        placed = {cpus: where for where, cpus in reversed(local)}  # each distinct set of CPUs once, named by its first variant
        for i, workload in enumerate(workloads.values()):
            for cpus, where in placed.items():
                check_fits(workload, cpus, f"workloads[{i}] under {where}")
        return cls(spec=spec, workloads=workloads, variants=variants)

    def renamed(self, name: str) -> Prepared:
        """The same experiment under another name (a default name another experiment holds)."""
        return dataclasses.replace(self, spec=self.spec.model_copy(update={"name": name}))

    def spec_json(self) -> dict[str, object]:
        return self.spec.model_dump(mode="json")


def _check_metric_settings(workload: Workload, where: str) -> None:
    """A `metrics` entry must name a metric the workload has, where that is known before it runs
    (commands and built-ins; a Google Benchmark binary's are known only from its output): a
    misspelt name would otherwise be silently ignored, and its direction with it."""
    if not isinstance(workload, ProbeWorkload) and workload.spec.command is None:
        return
    declared = [m["name"] for m in workload.info.get("metrics", [])] if isinstance(workload, ProbeWorkload) else []
    names = [*declared, *sorted(RESERVED), FINDING]
    # declared with placeholders: "sys.spawn/<method>:p50" stands for sys.spawn/fork:p50 and the others
    known = re.compile("|".join(re.sub(r"<[^>]*>", "[^:]+", re.escape(name)) for name in names))
    unknown = next((name for name in workload.spec.metrics if not known.fullmatch(name)), None)
    if unknown is not None:
        raise SpecError(f"{unknown!r} is no metric of this workload (it has {', '.join(names)})", where=where)


# what a resumed experiment may change: how long it runs, and whether it adds profiled runs (`--profile`
# on a resume profiles the blocks still to run, and those stored without: the timed runs stay as they are)
RESUMABLE = ("blocks", "until_decided", "profile")


def identity_digest(spec: dict[str, Any]) -> str:
    """The digest of what an experiment is, whatever its length or profiling: a resume may add
    blocks or profiled runs, and a fleet's task signed before that still names the same experiment."""
    return spec_digest({k: v for k, v in spec.items() if k not in RESUMABLE})


PROFILED_TIMEOUT_FACTOR = 2
Decided = Callable[[ExperimentRecord], bool]
Selected = Callable[[PlannedRun], bool]  # which planned runs this invocation may run (a fleet's task: one block)


def _keep_sequential(stored: UntilDecided | None, spec: ExperimentSpec) -> ExperimentSpec:
    """A sequential experiment's looks were calibrated for its budget: resumed without
    --until-decided it stays sequential; its budget may grow (more looks only make the
    thresholds stricter) but neither shrink nor move its first look, which would judge runs
    chosen by optional stopping as a fixed design."""
    if stored is None:
        return spec
    given = spec.until_decided
    if given is None:
        return spec.model_copy(update={"until_decided": stored})
    if given.min_blocks != stored.min_blocks or given.max_blocks < stored.max_blocks:
        raise SpecError(
            f"this experiment runs until decided with looks from block {stored.min_blocks} to "
            f"{stored.max_blocks}; a resume may raise --max-blocks but not lower it or move --min-blocks",
            where="--until-decided",
        )
    return spec


def _is_look(plan: list[PlannedRun], i: int, min_blocks: int) -> bool:
    """Whether run i ends a block (after warm-up) at which a sequential experiment looks."""
    here = plan[i]
    ends_block = i + 1 == len(plan) or plan[i + 1].block != here.block or plan[i + 1].warmup
    return ends_block and not here.warmup and here.block + 1 >= min_blocks


class Progress(Protocol):
    def start(self, total: int, done: int) -> None: ...

    def advance(self, run: PlannedRun, status: str) -> None: ...

    def note(self, text: str) -> None:
        """Something the user should know once, such as counters this machine lacks."""
        ...


class SilentProgress:
    def start(self, total: int, done: int) -> None:
        pass

    def advance(self, run: PlannedRun, status: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass


class Runner:
    def __init__(
        self,
        store: Store,
        *,
        executor: Executor | None = None,
        clock: Callable[[], float] = time.time,
        journal: KnobJournal | None = None,
        lock: MachineLock | None = None,
        progress: Progress | None = None,
        host: dict[str, object] | None = None,
    ) -> None:
        self.store = store
        self.served: ServedExecutor | None = None  # the default executor, whose launcher ends with each experiment
        if executor is None:
            executor = self.served = ServedExecutor()
        self.executor = executor
        self.clock = clock
        self.journal = journal or KnobJournal()
        self.lock = lock or MachineLock()
        self.progress = progress or SilentProgress()
        self.host = host
        self.noted: set[str] = set()
        self.set_up: set[tuple[str, str]] = set()  # (workload, variant) whose setup step has run
        self.remotes: dict[str, RemoteExecutor] = {}
        self.guests: list[GuestExecutor] = []  # booted for this experiment, shut down at its end
        self.executors: dict[str, Executor] = {}
        self.host_ids: dict[str, int] = {}
        self.recorded = 0  # runs stored by this invocation
        self.retry_failed = False  # a run stored as failed runs again (and its retry replaces it)
        self.samplers: dict[str, Sampler] = {}  # workload -> how its profiled runs are sampled
        self._profiling_of: Prepared | None = None  # what `samplers` were chosen for

    def open_experiment(self, prepared: Prepared, *, resume: bool) -> ExperimentRecord:
        spec = prepared.spec
        existing = self.store.find_experiment(spec.name)
        spec_json = prepared.spec_json()
        versions = {name: w.version for name, w in prepared.workloads.items()}
        if existing is None:
            return self.store.create_experiment(
                name=spec.name,
                spec=spec_json,
                workloads=[(w.name, w.kind, versions[w.name]) for w in spec.workloads],
                variants=[(v.name, v.model_dump(mode="json"), v.name == spec.baseline_name) for v in spec.variants],
                created_at=self.clock(),
            )
        if not resume:
            raise StoreError(
                f"an experiment named '{spec.name}' already exists in {self.store.target}",
                hint="continue it with --resume, or choose another name",
            )
        if identity_digest(existing.spec_document) != identity_digest(spec_json):
            raise SpecError(
                f"the spec of '{spec.name}' changed since it started; resuming would mix two experiments",
                hint="restore the spec or start a new experiment under another name",
            )
        changed = [w for w, v in versions.items() if existing.workload_versions.get(w) != v]
        if changed:
            raise SpecError(
                f"workload {', '.join(changed)} changed version since the experiment started (rebuilt binary?)",
                hint="start a new experiment: results of different versions are never compared",
            )
        spec_json = _keep_sequential(existing.spec.until_decided, spec).model_dump(mode="json")
        if existing.spec_hash != spec_digest(spec_json):  # more blocks, or now until decided: runs are reused
            existing = self.store.update_spec(existing, spec_json)
        return existing

    def _place(self, variant: PreparedVariant) -> tuple[Executor, dict[str, object]]:
        """Where a variant runs: this machine through the injected executor, a remote host (one
        executor per host, made ready on first use) or a guest of its own (booted here), with
        that host's or guest's fingerprint."""
        env = variant.spec.environment
        guest = variant.environment.guest if variant.environment else None
        here = self.host if self.host is not None else self._local_fingerprint()
        if guest is not None:
            executor = GuestExecutor(guest)
            self.guests.append(executor)
            # the machine that booted it: its runs pair with this machine's native runs
            return executor, {**executor.prepare(), "guest_of": self.store.host_row(here)[1]}
        if env.kind != "ssh":
            return self.executor, here
        remote = self.remotes.setdefault(env.label, RemoteExecutor(env))
        return remote, remote.prepare()

    def _shut_down_guests(self) -> None:
        guests, self.guests = self.guests, []
        for guest in guests:
            guest.close()

    @functools.cache  # noqa: B019 - one runner, one machine
    def _local_fingerprint(self) -> dict[str, object]:
        return fingerprint()

    def run(
        self,
        prepared: Prepared,
        *,
        resume: bool = False,
        retry_failed: bool = False,
        decided: Decided | None = None,
        only: Selected | None = None,
        joined: ExperimentRecord | None = None,
    ) -> ExperimentRecord:
        """Runs what the plan has not stored yet (of it, what `only` selects); `retry_failed`: and
        what it stored as failed or timed out, each retry replacing the failure it repeats (which
        stays in its details), so that a resume after a passing fault completes the experiment.
        A run stored as ok never runs again. In sequential mode
        (the spec's `until_decided`) the plan runs to `max_blocks`, and after each block from
        `min_blocks` on `decided` (which the caller gives: the runner never judges) says whether to stop.
        A run that another process on this host stored meanwhile (a fleet's block delivered
        twice) is skipped, never stored twice. `joined`: an experiment another process stored (a
        fleet's driver), run as stored: never created, lengthened or dropped here.

        The machine is held for the whole experiment (`MachineLock`: alone when its variants change
        knobs, swap or memory), and what runners killed before left behind (processes, cgroups) is
        cleared first. An experiment created here that stores no run (refused on the way) is
        dropped again, so its name is not burnt."""
        changes_machine = any(v.changes_machine for v in prepared.variants.values())
        with (
            self.lock.hold(prepared.spec.name, exclusive=changes_machine),
            self.served or contextlib.nullcontext(),
            contextlib.ExitStack() as guests,
        ):
            guests.callback(self._shut_down_guests)
            self.journal.ensure_clean()
            for note in clear_stale_runs():
                self._note_once(note)
            places = {name: self._place(v) for name, v in prepared.variants.items()}
            created = joined is None and self.store.find_experiment(prepared.spec.name) is None
            exp = joined or self.open_experiment(prepared, resume=resume)
            self.recorded = 0
            self.retry_failed = retry_failed
            try:
                return self._run(prepared, exp, places, decided, only)
            except BaseException:
                if created and self.recorded == 0:
                    self.store.drop_experiment(exp)
                raise

    def _run(
        self,
        prepared: Prepared,
        exp: ExperimentRecord,
        places: dict[str, tuple[Executor, dict[str, object]]],
        decided: Decided | None,
        only: Selected | None,
    ) -> ExperimentRecord:
        spec = prepared.spec
        self.executors = {name: executor for name, (executor, _) in places.items()}
        self.host_ids = {name: self.store.host_id(fp) for name, (_, fp) in places.items()}
        until = exp.spec.until_decided  # a resumed sequential experiment stays sequential
        plan = make_plan(
            [w.name for w in spec.workloads],
            [v.name for v in spec.variants],
            blocks=until.max_blocks if until else spec.blocks,
            warmup=spec.warmup,
            seed=spec.seed,
            profiled=self.profiled_workloads(prepared),
        )  # a longer plan starts with the same blocks in the same order, so stored runs stay in place
        scope: dict[str, set[Any]] = {}  # a selection's stored runs are read for its workloads and blocks only
        if only is not None:
            plan = [p for p in plan if only(p)]
            scope = {"workloads": {p.workload for p in plan}, "blocks": {p.block for p in plan}}
        hosts = set(self.host_ids.values())
        stored = {host: self.store.stored_keys(exp, host, ok_only=self.retry_failed, **scope) for host in hosts}
        todo = [p for p in plan if p.key not in stored[self.host_ids[p.variant]]]
        if self.retry_failed and (again := self._failed_before(exp, plan, stored, scope)):
            self.progress.note(f"{again} failed run(s) stored before run again (--keep-failed keeps them)")
        self.progress.start(len(plan), len(plan) - len(todo))
        done = 0
        pending = {p.key for p in todo}
        try:
            for i, planned in enumerate(plan):
                if planned.key in pending:
                    try:
                        run_one = self._run_profiled if planned.profiled else self._run_one
                        status = run_one(prepared, exp, self.host_ids[planned.variant], planned)
                    except AlreadyStored as exc:
                        self.progress.note(f"{exc.message}: another process stored it meanwhile")
                    else:
                        self.progress.advance(planned, status)
                    done += 1
                # looks at every block end from min_blocks on, but on resume not through blocks stored
                # whole before (their look happened then): from the last of them on
                fresh = done > 0 or i + 1 == len(plan) or plan[i + 1].key in pending
                if until and decided and fresh and _is_look(plan, i, until.min_blocks) and decided(exp):
                    self.progress.note(f"every primary row decided after {planned.block + 1} blocks: stopping")
                    break
            else:
                if until:
                    self.progress.note(f"the budget of {until.max_blocks} blocks ran out: undecided rows stay unclear")
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted after {len(plan) - len(todo) + done} of {len(plan)} runs, all of them stored; "
                f"knobs restored; continue with `benchlab run SPEC --resume`"
            ) from None
        return exp

    def profiled_workloads(self, prepared: Prepared) -> set[str]:
        """The workloads whose profiled runs this invocation runs: none where perf is missing
        (said once; the timed runs go on). A fleet's worker asks before it runs a block, to know
        whether that block is whole here without its profiled runs."""
        if self._profiling_of is prepared:
            return set(self.samplers)
        self._profiling_of = prepared
        wanted = {w.name: chosen for w in prepared.spec.workloads if (chosen := prepared.spec.profiling(w)) is not None}
        self.samplers = {}
        if not wanted:
            return set()
        try:
            perf = perf_path()
        except EnvironmentProblem as exc:
            self._note_once(f"{exc.message}; the timed runs go on without their profiled runs")
            return set()
        event = "cycles" if hardware_cycles(perf) else "cpu-clock"
        default = HARDWARE_COUNTERS if event == "cycles" else ()
        self.samplers = {
            name: Sampler(perf, event, chosen, tuple(chosen.counters) if chosen.counters is not None else default)
            for name, chosen in wanted.items()
        }
        self._note_once(
            f"profiled runs sample {event}" + ("" if event == "cycles" else " (this machine has no hardware cycle counter)")
        )
        return set(self.samplers)

    def _failed_before(
        self, exp: ExperimentRecord, plan: list[PlannedRun], ok: dict[int, set[Any]], scope: dict[str, set[Any]]
    ) -> int:
        """How many runs of the plan are stored, but not as ok: the failures a resume runs again."""
        every = {host: self.store.stored_keys(exp, host, ok_only=False, **scope) for host in ok}
        return sum(1 for p in plan if p.key in every[self.host_ids[p.variant]] - ok[self.host_ids[p.variant]])

    def _record(self, exp: ExperimentRecord, run: NewRun) -> None:
        self.store.record_run(exp, run, retry=self.retry_failed)
        self.recorded += 1

    def _restored(self, done: Restoration) -> None:
        """After every run: a knob that vanished meanwhile is noted; a change that cannot be undone
        stops the experiment, for every later run would be measured on a machine left changed."""
        for note in done.dropped:
            self._note_once(f"journal: {note}")
        if done.failed:
            raise EnvironmentProblem(f"{'; '.join(done.failed)}: left changed and journalled", hint="run `benchlab restore`")

    def _note_once(self, text: str | None) -> None:
        if text and text not in self.noted:
            self.noted.add(text)
            self.progress.note(text)

    def _untimed_steps(self, planned: PlannedRun, spec: WorkloadSpec, variant: PreparedVariant, timeout: float) -> None:
        """The workload's `setup` (once per variant in this invocation) and `clean` (every run)."""
        if spec.setup is not None and (planned.workload, planned.variant) not in self.set_up:
            run_step("setup", spec.setup, cwd=spec.cwd, env=variant.env, timeout=timeout)
            self.set_up.add((planned.workload, planned.variant))
        if spec.clean is not None:
            run_step("clean", spec.clean, cwd=spec.cwd, env=variant.env, timeout=timeout)

    def _run_one(self, prepared: Prepared, exp: ExperimentRecord, host_id: int, planned: PlannedRun) -> str:
        workload = prepared.workloads[planned.workload]
        variant = prepared.variants[planned.variant]
        timeout = workload.spec.timeout or prepared.spec.timeout
        launch = variant.launch(
            workload.argv(), cwd=workload.spec.cwd, timeout=timeout, perf_counters=workload.spec.perf_counters,
            memory_interval=workload.spec.memory_interval,
        )  # fmt: skip
        if workload.spec.command is None:  # built-in and Google Benchmark workloads report on stdout
            launch = dataclasses.replace(launch, stdout_limit=STDOUT_LIMIT_BYTES)
        started = self.clock()
        # the run as stored: its place in the plan and its start now, how it ended replaced at its end
        begun = NewRun(
            workload=planned.workload, variant=planned.variant, host_id=host_id, block=planned.block, warmup=planned.warmup,
            position=planned.position, status="running", started_at=started, ended_at=started,
        )  # fmt: skip

        finished: Finished | None = None
        machine: dict[str, Any] = {}  # the state it ran in (swap...), which is not the host's identity
        try:
            self._untimed_steps(planned, workload.spec, variant, timeout)
            try:
                variant.change_machine(self.journal)
                elsewhere = variant.spec.environment.kind in ("ssh", "vm")  # this machine's state is not theirs
                machine = {} if elsewhere else {"machine": machine_state()}
                with background_load(variant.background):
                    finished = self.executors[planned.variant].run(launch)
            finally:
                self._restored(self.journal.restore())
                findings = shim_findings(launch.env) if variant.spec.shim is not None else []  # read (and removed) always
            for note in (finished.usage.counters_note, *finished.usage.notes):
                self._note_once(note)
            if not finished.ok:
                raise finished.failure()
            for note in workload.notes(finished) if isinstance(workload, ProbeWorkload) else ():
                self._note_once(note)
            details, mismatch = variant.inspect(finished.usage.mapped)
            complaint = allocator_complaint(finished.stderr) or mismatch
            if complaint:
                raise WorkloadFailed(complaint, process_exit_code=finished.exit_code)
            metrics = [*usage_metrics(finished.usage), *workload.metrics(finished)]
            details = {**details, **workload.details(finished)}  # failed benchmarks, an app cycle's launches
            metrics += findings
        except WorkloadFailed as failure:
            tail = failure.stderr_tail or (finished.stderr_tail() if finished is not None else "")
            self._record(exp, dataclasses.replace(
                begun, status=failure.status, ended_at=self.clock(), exit_code=failure.process_exit_code,
                message=failure.message, stderr_tail=tail, details=machine,
            ))  # fmt: skip
            return failure.status
        ended = dataclasses.replace(
            begun, status="ok", ended_at=self.clock(), exit_code=0, metrics=tuple(metrics), details={**details, **machine}
        )
        self._record(exp, ended)
        return "ok"

    def _run_profiled(self, prepared: Prepared, exp: ExperimentRecord, host_id: int, planned: PlannedRun) -> str:
        """One profiled run: the workload's run under the sampler, with everything its timed runs
        get (steps, knobs, background load), stored with its stacks. Its failure, perf's
        included, is stored with the run and never stops the experiment: the timed runs decide."""
        workload = prepared.workloads[planned.workload]
        variant = prepared.variants[planned.variant]
        sampler = self.samplers[planned.workload]
        # the sampler's start, its sampling and, in a guest, its system-wide recording under emulation
        # slow a run down: a profiled run has twice the time its timed runs have
        timeout = PROFILED_TIMEOUT_FACTOR * (workload.spec.timeout or prepared.spec.timeout)
        started = self.clock()
        stored = ProfiledRun(
            workload=planned.workload, variant=planned.variant, host_id=host_id, block=planned.block,
            position=planned.position, status="failed", started_at=started, ended_at=started,
        )  # fmt: skip
        executor = self.executors[planned.variant]
        refusal = _cannot_profile(variant, executor)
        if refusal is not None:
            self._note_once(f"variant {planned.variant}: {refusal}")
            return self._record_profiled(exp, dataclasses.replace(stored, message=refusal))
        launch = variant.launch(workload.argv(), cwd=workload.spec.cwd, timeout=timeout)
        guest = executor if isinstance(executor, GuestExecutor) else None
        system = sampler.settings.scope == "system" or (sampler.settings.scope is None and guest is not None)
        with scratch(guest.shared_folder() if guest else None) as data:
            try:
                self._untimed_steps(planned, workload.spec, variant, timeout)
                try:
                    variant.change_machine(self.journal)
                    with background_load(variant.background):
                        finished = executor.run(sampler.record(launch, data, system=system))
                finally:
                    self._restored(self.journal.restore())
                    if variant.spec.shim is not None:
                        shim_findings(launch.env)  # the report file is removed; a profiled run's findings are not samples
                if not finished.ok:
                    raise finished.failure()
                stacks = sampler.fold(data, executor)
                counted = sampler.counted(data)
                if counted.uncounted:
                    self._note_once(f"{planned.workload}: perf cannot count {', '.join(counted.uncounted)} on this machine")
                if counted.multiplexed:
                    self._note_once(
                        f"{planned.workload}: perf stat counted {', '.join(counted.multiplexed)} for part of a run and "
                        "scaled them up: more events than this machine's PMU counts at once"
                    )
            except WorkloadFailed as failure:
                return self._record_profiled(exp, dataclasses.replace(
                    stored, status=failure.status, ended_at=self.clock(),
                    message=f"{failure.message}: {failure.stderr_tail}" if failure.stderr_tail else failure.message,
                ))  # fmt: skip
            if sampler.truncated(data):
                self._note_once(f"{planned.workload}: a profile reached max_size and was cut short")
        return self._record_profiled(exp, dataclasses.replace(
            stored, status="ok", ended_at=self.clock(), wall_s=finished.usage.wall_s,
            profile=encode(stacks.model_copy(update={"counters": counted.values})),
        ))  # fmt: skip

    def _record_profiled(self, exp: ExperimentRecord, run: ProfiledRun) -> str:
        self.store.record_profiled(exp, run, retry=self.retry_failed)
        self.recorded += 1
        return run.status if run.status == "ok" else f"profile {run.status}"


def _cannot_profile(variant: PreparedVariant, executor: Executor) -> str | None:
    """Why a variant's profiled runs cannot run where it runs, if they cannot: perf runs on this
    machine and in a vm guest that stays up (its perf data is folded by the guest that wrote it),
    not in a container (no perf in its root) nor on another host."""
    kind = variant.spec.environment.kind
    if kind in ("ssh", "container"):
        return f"profiled runs run on this machine and in vm guests, not in a {kind}"
    if isinstance(executor, GuestExecutor) and executor.guest.fresh:
        return "profiled runs need a guest that stays up between runs (fresh = false): its perf data is folded by that guest"
    return None
