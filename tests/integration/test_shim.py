"""The allocator shim against real programs: the whole malloc family still behaves, frees
are sampled one in N per thread, the quarantine catches a write after free, the scope
limits it to matching processes, and its cost grows with the sampling rate."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchlab.locate import SHIM_REPORT, shim_path
from benchlab.measure.libraries import find_library
from benchlab.spec.models import ShimSpec
from benchlab.variants.shim import shim_events, shim_report_environment
from tests.conftest import cli, need

pytestmark = pytest.mark.serial  # measures the shim's cost

# Exercises every function the shim interposes, across threads and a fork, and checks
# what each returns; with argument "uaf" it writes into a block after freeing it.
PROGRAM = r"""
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed: %s\n", #c); exit(3); } } while (0)

static void family(void) {
    long page = sysconf(_SC_PAGESIZE);
    char *p = malloc(100); CHECK(p && malloc_usable_size(p) >= 100); memset(p, 7, 100);
    p = realloc(p, 5000); CHECK(p && p[99] == 7); free(p);
    int *z = calloc(1000, sizeof(int)); for (int i = 0; i < 1000; i++) CHECK(z[i] == 0); free(z);
    void *a = NULL; CHECK(posix_memalign(&a, 256, 1000) == 0 && (uintptr_t)a % 256 == 0); free(a);
    a = aligned_alloc(64, 640); CHECK(a && (uintptr_t)a % 64 == 0); free(a);
    a = memalign(4096, 10); CHECK(a && (uintptr_t)a % 4096 == 0); free(a);
    a = valloc(10); CHECK(a && (uintptr_t)a % page == 0); free(a);
    a = pvalloc(10); CHECK(a && (uintptr_t)a % page == 0 && malloc_usable_size(a) >= (size_t)page); free(a);
    free(NULL);
}

static void *churn(void *arg) {
    for (int i = 0; i < 10000; i++) { void *volatile q = malloc(32 + i % 200); free(q); }  /* volatile: no elision */
    family();
    return arg;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "uaf") == 0) {
        char *volatile p = malloc(64);
        free(p);
        ((volatile char *)p)[8] = 'x';  /* the deliberate bug; volatile, or the compiler drops it */
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "count") == 0) {
        for (int i = 0; i < 7000; i++) { void *volatile q = malloc(24); free(q); }
        return 0;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn, NULL);
    pid_t child = fork();
    if (child == 0) { churn(NULL); _exit(0); }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    int status; waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    puts("family ok");
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or need("gcc")
    folder = tmp_path_factory.mktemp("shim")
    source = folder / "family.c"
    source.write_text(PROGRAM)
    binary = folder / "family"
    subprocess.run([cc, "-O1", "-pthread", "-o", str(binary), str(source)], check=True)
    return binary


@dataclass
class Ran:
    proc: subprocess.CompletedProcess[str]
    events: list[dict]  # the shim's report: what benchlab reads, never its words on stderr

    def caught(self) -> list[dict]:
        return [e for e in self.events if e["event"] == "use_after_free_write"]

    def sampled(self) -> list[int]:
        return [e["sampled"] for e in self.events if e["event"] == "stats"]


def run(argv: list[str], preload: list[str], **settings: str) -> Ran:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHLAB_SHIM_")}
    env.update({f"BENCHLAB_SHIM_{k.upper()}": v for k, v in settings.items()}, LD_PRELOAD=" ".join(preload))
    report = shim_report_environment(ShimSpec())
    proc = subprocess.run(argv, env={**env, **report}, capture_output=True, text=True, timeout=60)
    return Ran(proc, shim_events(report[SHIM_REPORT]))


@pytest.mark.parametrize("allocator", ["glibc", "jemalloc", "tcmalloc", "mimalloc"])
@pytest.mark.parametrize("sampling", ["0", "1", "3"])
def test_the_whole_family_behaves_across_threads_and_fork(program: Path, allocator: str, sampling: str) -> None:
    library = [] if allocator == "glibc" else [find_library(allocator)]
    if None in library:
        pytest.skip(f"{allocator} is not installed")
    ran = run([str(program)], [shim_path(), *library], sampling=sampling, quarantine="64")  # type: ignore[list-item]
    assert ran.proc.returncode == 0, ran.proc.stderr
    assert ran.proc.stdout.strip() == "family ok"
    assert ran.caught() == []


def test_one_free_in_n_is_sampled_per_thread(program: Path) -> None:
    counts = {n: run([str(program), "count"], [shim_path()], sampling=str(n), stats="1").sampled() for n in (1, 7, 1000)}
    # 7000 frees in main; the C library frees a few blocks of its own around them
    assert 7000 <= counts[1][0] <= 7010
    assert 1000 <= counts[7][0] <= 1002
    assert counts[1000][0] == 7
    idle = run([str(program), "count"], [shim_path()], sampling="0", stats="1")
    assert idle.proc.stderr == "" and idle.events == []


def test_the_quarantine_catches_a_write_after_free(program: Path) -> None:
    ran = run([str(program), "uaf"], [shim_path()], sampling="1")
    assert ran.proc.returncode == 0
    (caught,) = ran.caught()  # in pid N: block 0x... of N bytes changed at offset 8
    assert caught["pid"] > 0 and re.fullmatch("0x[0-9a-f]+", caught["block"]) and caught["size"] >= 64
    assert caught["offset"] == 8
    # an unsampled free is not checked, and a no-op shim checks nothing
    assert run([str(program), "uaf"], [shim_path()], sampling="2").events == []
    assert run([str(program), "uaf"], [shim_path()], sampling="0").events == []


def test_the_scope_limits_the_shim_to_processes_whose_name_matches(program: Path, tmp_path: Path) -> None:
    other = tmp_path / "bystander"
    shutil.copy(program, other)
    script = f"{other} uaf; {program} uaf"
    both = run(["sh", "-c", script], [shim_path()], sampling="1", stats="1")
    assert len(both.caught()) == 2
    scoped = run(["sh", "-c", script], [shim_path()], sampling="1", stats="1", scope="fam*")
    assert len(scoped.caught()) == 1
    assert len(scoped.sampled()) == 1  # neither sh nor the bystander sampled anything


def test_a_bad_setting_stops_the_process_with_a_message(program: Path) -> None:
    proc = run([str(program), "count"], [shim_path()], sampling="often").proc
    assert proc.returncode != 0
    assert "BENCHLAB_SHIM_SAMPLING=often is not a whole number" in proc.stderr


def write_spec(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n{body}')
    return path


def sampling_sweep(tmp_path: Path, name: str, *, ops: int, rates: list[int]) -> Path:
    """The shim-cost study's shape: no shim, the no-op shim, and the shim at each sampling rate,
    on a single-threaded allocator churn of `ops` operations, fitted in 1/N."""
    return write_spec(
        tmp_path, name,
        f"""blocks = 3
[[workloads]]
name = "churn"
builtin = "alloc.churn"
options = {{ threads = 1, ops = {ops} }}
[[variants]]
name = "no-shim"
[[variants]]
name = "noop"
shim = {{ sampling = 0 }}
[sweep]
fit = "reciprocal"
[[sweep.parameters]]
field = "shim.sampling"
values = {rates}
""",
    )  # fmt: skip


def test_a_shim_variant_reports_the_use_after_free_its_runs_caught(program: Path, tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path, "uaf",
        f"""blocks = 2
[[workloads]]
name = "buggy"
command = ["{program}", "uaf"]
[[variants]]
name = "plain"
[[variants]]
name = "shim"
shim = {{ sampling = 1 }}
""",
    )  # fmt: skip
    cli("run", str(spec), check=True)
    data = json.loads(cli("report", "uaf", "--format", "json", check=True).stdout)
    caught = [(r["variant"], r["metrics"].get("uaf_writes_caught")) for r in data["runs"]]
    assert sorted(caught) == [("plain", None), ("plain", None), ("shim", 1.0), ("shim", 1.0)]


@pytest.mark.slow
def test_the_cost_grows_with_the_sampling_rate_and_the_fit_sees_it(tmp_path: Path) -> None:
    spec = sampling_sweep(tmp_path, "shim-cost", ops=300000, rates=[1, 1000])
    cli("run", str(spec), check=True)
    data = json.loads(cli("report", "shim-cost", "--format", "json", check=True).stdout)
    rows = {r["variant"]: r for r in data["rows"] if r["metric"] == "cpu_time"}
    assert rows["sampling-1"]["change"] > 0.5  # every free filled, parked and checked: far slower
    assert rows["sampling-1"]["change"] > rows["sampling-1000"]["change"]
    (fit,) = [f for f in data["sweep"]["fits"] if f["metric"] == "cpu_time"]
    assert fit["slope_ci"][0] > 0


@pytest.mark.slow
def test_the_seeds_sampling_list_reads_the_cost_of_being_installed_only_where_the_fit_allows(tmp_path: Path) -> None:
    """The seed study's own N list, beside the no-op shim: every fit says whether the line
    describes the points, sets the measured no-op cost beside its change at 0, and reads the line's
    change at 0 only where the line fits and agrees with the measured one, saying so otherwise."""
    spec = sampling_sweep(tmp_path, "shim-seed", ops=100000, rates=[1, 10, 20, 25, 33, 50, 100, 1000000])
    cli("run", str(spec), "--quick", check=True)
    data = json.loads(cli("report", "shim-seed-quick", "--format", "json", check=True).stdout)
    table = cli("report", "shim-seed-quick", "--format", "md", check=True).stdout
    fits = data["sweep"]["fits"]
    assert {f["metric"] for f in fits} >= {"cpu_time", "tree_peak"}
    for f in fits:
        assert f["measured_at_0"]["variant"] == "noop" and f["lack_of_fit_p"] is not None
        models = [m["model"] for m in f["models"]]
        assert models[0] == "line" and {"log", "piecewise"} <= set(models) <= {"line", "log", "additive", "piecewise"}
        read_line = f["models"][0]["fits"] and f["measured_agrees"]
        assert f["change_at_0_from"] == ("line" if read_line else "measured (noop)")
        if not read_line:
            assert f["change_at_0"] == f["measured_at_0"]["change"]
            alone, grouped = f"churn {f['metric']}: ", f" {f['metric']} ("
            (said,) = [w for w in data["warnings"] if w.startswith(alone) or (w.startswith("churn: ") and grouped in w)]
            assert "the line" in said and said in table
    assert "measured at 0 (noop)" in table and "lack of fit" in table
