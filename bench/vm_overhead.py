"""What a vm environment costs, in one script run: the guest's boot time under KVM (where a
guest boots under it) and TCG, the per-run overhead of a run inside a warm guest against the
same run natively, and the TCG/native time ratio of a CPU-suite workload.

Each run goes through the executor an experiment uses (`GuestExecutor` in the guest, the
served launcher here), so the overhead is the round trip a run costs benchlab: the request,
the fork and wait4 in the guest's launcher, the answer back over virtio-serial. It is the
median of `--runs` runs of /bin/true, less the same command's median natively; the target is
under 5 ms extra on KVM (TCG emulates every instruction of the guest's launcher, so its
figure is printed for the record). The CPU workload's ratio is of the medians of the
process's wall time as each kernel measured it.

    uv run python bench/vm_overhead.py [--runs 100] [--kernel 6.1.0-56] [--workload cpu.nbody]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from benchlab.errors import BenchlabError
from benchlab.locate import probe_path
from benchlab.measure.guest import GuestExecutor
from benchlab.measure.process import Finished, Launch
from benchlab.measure.served import ServedExecutor
from benchlab.spec.models import EnvironmentSpec
from benchlab.variants.environment import prepare_guest

TARGET_MS = 5.0


def round_trips_ms(run: Callable[[Launch], Finished], argv: list[str], runs: int) -> list[float]:
    """The wall time of each call through an executor, in ms: what one run costs the runner."""
    launch = Launch(argv=tuple(argv), env=dict(os.environ))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        finished = run(launch)
        times.append((time.perf_counter() - start) * 1000)
        if not finished.ok:
            raise SystemExit(f"{argv[0]} failed: {finished.stderr_tail()}")
    return times


def process_wall_s(run: Callable[[Launch], Finished], argv: list[str], runs: int) -> float:
    """The median wall time of the process as its own kernel measured it (wait4 in the launcher)."""
    walls = []
    for _ in range(runs):
        finished = run(Launch(argv=tuple(argv), env=dict(os.environ), timeout=1800))
        if not finished.ok:
            raise SystemExit(f"{argv[1]} failed: {finished.stderr_tail()}")
        walls.append(finished.usage.wall_s)
    return statistics.median(walls)


def boot(kernel: str | None, accel: str, cpus: int) -> tuple[GuestExecutor | None, float, str]:
    spec = EnvironmentSpec(kind="vm", kernel=kernel, accel=accel, cpus=cpus)
    guest = GuestExecutor(prepare_guest(spec, f"vm ({accel})"))
    start = time.perf_counter()
    try:
        guest.prepare()
    except BenchlabError as exc:
        guest.close()
        return None, time.perf_counter() - start, str(exc)
    return guest, time.perf_counter() - start, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="runs of /bin/true in each place")
    parser.add_argument("--kernel", default=None, help="guest kernel (default: Debian's current)")
    parser.add_argument("--workload", default="cpu.nbody", help="a CPU-suite workload for the TCG/native ratio")
    parser.add_argument("--repeats", type=int, default=3, help="runs of that workload in each place")
    args = parser.parse_args()
    cpus = min(2, os.cpu_count() or 1)
    warm: dict[str, GuestExecutor] = {}
    try:
        for accel in ("kvm", "tcg"):
            guest, seconds, why = boot(args.kernel, accel, cpus)
            print(f"boot {accel}: {seconds:.1f} s" + (f" - did not boot: {why}" if guest is None else ""))
            if guest is not None:
                warm[accel] = guest
        with ServedExecutor() as native:
            here = statistics.median(round_trips_ms(native.run, ["/bin/true"], args.runs))
            print(f"per run, native: {here:.2f} ms (median of {args.runs} runs of /bin/true)")
            for accel, guest in warm.items():
                inside = statistics.median(round_trips_ms(guest.run, ["/bin/true"], args.runs))
                target = f" (target under {TARGET_MS:.0f} ms on KVM)" if accel == "kvm" else " (emulated)"
                print(f"per run, {accel} guest: {inside:.2f} ms, {inside - here:+.2f} ms over native{target}")
            workload = [probe_path(), args.workload, "--threads", "1"]
            native_s = process_wall_s(native.run, workload, args.repeats)
            print(f"{args.workload} natively: {native_s:.3f} s (median of {args.repeats})")
            for accel, guest in warm.items():
                guest_s = process_wall_s(guest.run, workload, args.repeats)
                print(f"{args.workload} in the {accel} guest: {guest_s:.3f} s, {accel}/native = {guest_s / native_s:.2f}")
    finally:
        for guest in warm.values():
            guest.close()


if __name__ == "__main__":
    main()
