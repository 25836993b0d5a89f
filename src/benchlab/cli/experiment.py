"""Commands that run experiments: run (a spec), compare (the quick form), demo."""

from __future__ import annotations

import time
from collections import Counter

from benchlab.cli import fleet as fleet_options
from benchlab.cli import options
from benchlab.cli.console import err, out
from benchlab.cli.options import Exports, with_exports
from benchlab.cli.parser import Commands, Parser, count, option, switch
from benchlab.errors import RunsFailed, SpecError
from benchlab.report import check_format, needs_runs, safe

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path

    from benchlab.analysis.analyze import Analysis
    from benchlab.cli.fleet_target import FleetTarget
    from benchlab.spec.models import ExperimentSpec, WorkloadSpec
    from benchlab.store import ExperimentRecord

STATUS_WORDS = {"failed": "failed", "timeout": "timed out"}
QUICK_BLOCKS = 3  # the fewest blocks the paired t decides with (`run --quick`, `score --quick`)


def check_failures(analyses: list[Analysis], what: str, *, allow: bool) -> None:
    """Exit 5 (after the report) when any stored run of the experiment failed or timed out, or a
    benchmark inside a run did. A resumed experiment counts the runs of earlier invocations too:
    they are in the report it prints, and its verdicts lack them just the same."""
    runs = sum(len(a.data.runs) for a in analyses)
    failed = Counter(STATUS_WORDS.get(r.status, r.status) for a in analyses for r in a.failed_runs)
    benchmarks = [b for a in analyses for b in a.failed_benchmarks]
    if allow or not (failed or benchmarks):
        return
    parts = []
    if failed:
        kinds = f" ({', '.join(f'{n} {status}' for status, n in sorted(failed.items()))})" if set(failed) != {"failed"} else ""
        parts.append(f"{failed.total()} of {runs} runs of {what} failed{kinds}")
    if benchmarks:
        first = benchmarks[0]
        parts.append(
            f"{len(benchmarks)} benchmark(s) failed inside runs ({first.workload}: {first.benchmark} "
            f"in {first.failed} of {first.runs})"
        )
    raise RunsFailed("; ".join(parts) + "; the report lists them (--allow-failures exits 0 all the same)")


def load_spec(path: str | Path) -> ExperimentSpec:
    """A spec file as `benchlab run` takes it: its CPU suite section expanded by the suite (whose
    data the spec layer below it cannot read), then its sweep, then the whole validated. The path
    is the command line's text: pathlib (3 ms of a start) is not needed to refuse a missing file."""
    from benchlab.spec.files import read_spec

    data = read_spec(path)  # a missing or malformed file is refused before the models load
    from benchlab.spec.validate import spec_from_dict
    from benchlab.suite.cpu import expand_spec

    return spec_from_dict(expand_spec(data, str(path)), str(path))


def sequential(
    spec: ExperimentSpec, until_decided: bool, min_blocks: int | None, max_blocks: int | None, *, where: str = "--until-decided"
) -> ExperimentSpec:
    """The spec with the command line's sequential settings (they win over the spec's); `where`
    names them in a refusal."""
    from pydantic import ValidationError

    from benchlab.spec.models import UntilDecided

    if not until_decided:
        if min_blocks is not None or max_blocks is not None:
            flag = "--min-blocks" if min_blocks is not None else "--max-blocks"
            raise SpecError("--min-blocks and --max-blocks apply with --until-decided", where=flag)
        return spec
    given = spec.until_decided.model_dump() if spec.until_decided else {}
    given.update({k: v for k, v in (("min_blocks", min_blocks), ("max_blocks", max_blocks)) if v is not None})
    try:
        return spec.model_copy(update={"until_decided": UntilDecided.model_validate(given)})
    except ValidationError as exc:
        raise SpecError(exc.errors()[0]["msg"].removeprefix("Value error, "), where=where) from None


def shortened(spec: ExperimentSpec, blocks: int | None, quick: bool) -> ExperimentSpec:
    """The spec at the command line's length, validated as the spec's own fields are. `--blocks N`
    fixes the length (a sequential spec then runs exactly N blocks); `--quick` also drops the
    warm-up and stores the try under NAME-quick, so the spec's own name stays free for the real run."""
    if blocks is None and not quick:
        return spec
    from pydantic import ValidationError

    from benchlab.spec.load import spec_error
    from benchlab.spec.models import ExperimentSpec

    update: dict[str, object] = {"blocks": QUICK_BLOCKS if blocks is None else blocks, "until_decided": None}
    if quick:
        update |= {"warmup": 0, "name": f"{spec.name}-quick", "workloads": [_quick_workload(w) for w in spec.workloads]}
    try:
        return ExperimentSpec.model_validate({**spec.model_dump(), **update})
    except ValidationError as exc:
        raise spec_error(exc, "--blocks" if blocks is not None else "--quick") from None


def _quick_workload(workload: WorkloadSpec) -> dict[str, object]:
    """A built-in workload with the option values its probe declares for a short try (the app
    cycle's 10 iterations where the study runs 150)."""
    fields = workload.model_dump()
    if workload.builtin is not None:
        from benchlab.workloads.probe import catalogue  # runs the probe: only for a quick try

        quick = catalogue().get(workload.builtin, {}).get("quick") or {}
        fields["options"] = {**workload.options, **quick}
    return fields


def execute(
    spec: ExperimentSpec,
    *,
    db: str | None,
    resume: bool,
    fmt: str,
    allow_failures: bool,
    exports: Exports | None = None,
    fleet: FleetTarget | None = None,
    keep_failed: bool = False,
    named: bool = True,
    profile: bool = False,
) -> None:
    """Runs the spec (`resume`: what it has not stored yet, and the runs stored as failed unless
    `keep_failed`), prints its report, writes its exports, exits 5 where runs failed. A spec not
    `named` by its user carries a default name, stored as the next free one where it is taken.
    `profile` (`--profile`): profiled runs as the spec's `profile = true` asks, where it asks for none."""
    if keep_failed and not resume:
        raise SpecError("--keep-failed applies with --resume (a new experiment has no failed runs)", where="--keep-failed")
    # Imported here so that a bad spec is refused without loading scipy and SQLAlchemy.
    from benchlab.analysis.analyze import analyze
    from benchlab.cli.progress import BarProgress
    from benchlab.cli.results import check_exports, load_for_report, open_store, print_report, write_exports
    from benchlab.runner import Prepared, Runner
    from benchlab.stats.verdict import plan_warning

    check_format(fmt)
    exports = exports or {}
    check_exports(exports)
    if profile and spec.profile is None:
        from benchlab.spec.models import ProfileSpec

        spec = spec.model_copy(update={"profile": ProfileSpec()})
    prepared = Prepared.from_spec(spec)  # every check against the machine happens before the first run
    store = open_store(db)
    if not named and not resume:
        prepared = prepared.renamed(store.unused_name(spec.name))
    compared = len(spec.variants) > 1 and spec.until_decided is None
    if compared and (warning := plan_warning(spec.blocks, spec.alpha, [w.builtin for w in spec.workloads])):
        err().print(f"warning: {warning}", style="yellow", highlight=False)

    def decided(exp: ExperimentRecord) -> bool:
        return not analyze(store.load(exp)).undecided()

    if fleet is not None:
        exp = fleet.run(prepared, store, resume=resume, retry_failed=resume and not keep_failed)
    else:
        with BarProgress() as progress:
            exp = Runner(store, progress=progress).run(
                prepared, resume=resume, retry_failed=resume and not keep_failed, decided=decided
            )
    analysis = analyze(load_for_report(store, exp, every_record=needs_runs(fmt, *exports)))
    drawn = analysis.report()
    print_report(drawn, fmt)
    write_exports(drawn, exports, stored_as=exp.name)
    err().print(safe.text(f"stored as '{exp.name}' in {store.target}", limit=safe.LINE_MAX), style="dim", highlight=False)
    check_failures([analysis], f"'{exp.name}'", allow=allow_failures)


@with_exports
def run(
    spec: str,
    *,
    db: str | None,
    resume: bool,
    keep_failed: bool,
    fmt: str,
    until_decided: bool,
    min_blocks: int | None,
    max_blocks: int | None,
    allow_failures: bool,
    blocks: int | None,
    quick: bool,
    exports: Exports,
    fleet: str | None,
    broker: str | None,
    key: Path | None,
    broker_ca: Path | None,
    consumer_timeout: float | None,
    profile: bool,
) -> None:
    """Run the experiment a spec describes and print its verdict table."""
    if until_decided and (blocks is not None or quick):
        flag = "--blocks" if blocks is not None else "--quick"
        raise SpecError(f"{flag} fixes how many blocks run, --until-decided lets the results decide; give one", where=flag)
    check_format(fmt)
    spec_ = sequential(shortened(load_spec(spec), blocks, quick), until_decided, min_blocks, max_blocks)
    from benchlab.cli.fleet_target import FleetTarget

    target = FleetTarget.given(fleet, broker, key, broker_ca, consumer_timeout)
    execute(
        spec_, db=db, resume=resume, fmt=fmt, allow_failures=allow_failures, exports=exports, fleet=target,
        keep_failed=keep_failed, profile=profile,
    )  # fmt: skip


@with_exports
def compare(
    *,
    workload: list[str],
    cmd: list[str],
    gbench: list[str],
    variant: list[str],
    blocks: int,
    warmup: int,
    seed: int,
    baseline: str | None,
    timeout: float,
    name: str | None,
    db: str | None,
    resume: bool,
    keep_failed: bool,
    fmt: str,
    until_decided: bool,
    min_blocks: int | None,
    max_blocks: int | None,
    allow_failures: bool,
    exports: Exports,
    profile: bool,
) -> None:
    """Compare variants without a spec file."""
    check_format(fmt)
    from benchlab.spec.quick import quick_spec

    spec = quick_spec(
        name=time.strftime("compare-%Y%m%d-%H%M%S") if name is None else name,
        builtins=workload, commands=cmd, gbench=gbench, variants=variant, blocks=blocks,
        warmup=warmup, seed=seed, baseline=baseline, timeout=timeout,
    )  # fmt: skip
    execute(
        sequential(spec, until_decided, min_blocks, max_blocks),
        db=db, resume=resume, fmt=fmt, allow_failures=allow_failures, exports=exports, keep_failed=keep_failed,
        named=name is not None, profile=profile,
    )  # fmt: skip


DEMO_VARIANTS = [
    "base",
    "base-again",  # identical to base: an A/A comparison, which must never come out better or worse
    "one-cpu: cpus=0",  # the same work squeezed onto one CPU: a known slowdown for two threads
]


@with_exports
def demo(*, db: str | None, blocks: int, allow_failures: bool, exports: Exports) -> None:
    """A quick A/A plus A/B comparison on built-in workloads (about a minute); without --db its
    database and its HTML page (demo.html) are kept in a new folder under the temporary directory."""
    import tempfile
    from pathlib import Path

    from benchlab.spec.quick import quick_spec

    exports = dict(exports)
    folder = None if db else tempfile.mkdtemp(prefix="benchlab-demo-")
    if folder and "html" not in exports:  # the page people read, beside the table: where the run left its database
        exports["html"] = [Path(folder) / "demo.html"]
    spec = quick_spec(
        name=time.strftime("demo-%Y%m%d-%H%M%S"),
        builtins=["alloc.churn threads=2 ops=1000000", "ipc.pipe.pingpong roundtrips=20000"],
        commands=[], gbench=[], variants=DEMO_VARIANTS, blocks=blocks, warmup=1, seed=1, baseline="base", timeout=120,
    )  # fmt: skip
    out().print(
        "demo: 'base-again' is identical to 'base' (A/A: expect same or unclear, never better/worse); "
        "'one-cpu' pins both workloads to CPU 0 (A/B: expect changes)",
        style="bold",
    )
    execute(
        spec, db=db or str(Path(folder or ".") / "demo.db"), resume=False, fmt="table", allow_failures=allow_failures,
        exports=exports,
    )  # fmt: skip


def register(commands: Commands) -> None:
    commands.command("run", run, _run_options)
    commands.command("compare", compare, _compare_options)
    commands.command("demo", demo, _demo_options)


def _run_options(parser: Parser) -> None:
    parser.add_argument("spec", help="experiment spec (TOML)")
    _experiment_options(parser)
    count(parser, "-n", "--blocks", help="run N blocks instead of the spec's (the rest of the spec unchanged)")
    switch(
        parser,
        "--quick",
        help=f"a short try: {QUICK_BLOCKS} blocks (or --blocks), no warm-up, not sequential, short built-ins, as NAME-quick",
    )
    fleet_options.driver_options(parser)


def _compare_options(parser: Parser) -> None:
    options.sources(parser)
    options.variants(parser)
    count(parser, "-n", "--blocks", default=10, help="blocks (runs per variant)")
    count(parser, "--warmup", default=0, help="untimed warm-up runs per variant")
    options.seed(parser)
    option(parser, "--baseline", help="variant the others are compared with")
    options.timeout(parser)
    option(parser, "--name", help="experiment name (default: compare-DATE-TIME)")
    _experiment_options(parser)


def _demo_options(parser: Parser) -> None:
    options.db(
        parser,
        help="where to store it: a SQLite path or a postgresql:// URL (default: a new database in a temporary "
        "folder; BENCHLAB_DB is not read, so the demo never writes into yours)",
    )
    count(parser, "-n", "--blocks", default=10, help="blocks (runs per variant)")
    options.allow_failures(parser)
    options.exports(parser)


def _experiment_options(parser: Parser) -> None:
    """What every command running a spec or the quick form takes: the database, resuming, the
    report and its exports, sequential looks and failures."""
    options.db(parser)
    options.resume(parser)
    options.keep_failed(parser)
    options.report_format(parser)
    options.sequential(parser)
    options.allow_failures(parser)
    options.profile(parser)
    options.exports(parser)
