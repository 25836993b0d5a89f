"""Allocator tunables checked against the installed allocators, and runs whose allocator was
not really in force failing rather than being measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchlab.errors import SpecError
from benchlab.measure.libraries import find_library
from benchlab.runner import Prepared
from benchlab.spec.validate import spec_from_dict
from tests.conftest import cli

ALLOCATOR_ENV = ("MALLOC_CONF", "GLIBC_TUNABLES", "MIMALLOC_", "TCMALLOC_")


def prepared_env(**variant: Any) -> dict[str, str]:
    spec = spec_from_dict(
        {"name": "t", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "v", **variant}]}
    )
    env = Prepared.from_spec(spec).variants["v"].env
    return {k: v for k, v in env.items() if k.startswith(ALLOCATOR_ENV)}


def needs(allocator: str) -> None:
    if find_library(allocator) is None:
        pytest.skip(f"{allocator} is not installed")


def test_tunables_reach_each_allocator_where_it_reads_them() -> None:
    assert prepared_env(tunables={"arena_max": 2, "trim_threshold": 131072}) == {
        "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072"
    }
    needs("jemalloc")
    env = prepared_env(allocator="jemalloc", tunables={"dirty_decay_ms": 30000, "narenas": 12, "background_thread": True})
    assert env == {"MALLOC_CONF": "dirty_decay_ms:30000,narenas:12,background_thread:true"}
    # "cpus": as many as the variant may use
    assert prepared_env(allocator="jemalloc", tunables={"narenas": "cpus"}, cpus="0") == {"MALLOC_CONF": "narenas:1"}
    needs("mimalloc")
    assert prepared_env(allocator="mimalloc", tunables={"eager_commit": False}) == {"MIMALLOC_EAGER_COMMIT": "0"}
    needs("tcmalloc")
    assert prepared_env(allocator="tcmalloc", tunables={"release_rate": 5}) == {"TCMALLOC_RELEASE_RATE": "5"}


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"tunables": {"arenamax": 2}}, "variants[0].tunables.arenamax: glibc has no malloc tunable 'arenamax'"),
        ({"tunables": {"arena_max": 0}}, "variants[0].tunables.arena_max: '0' is not an integer in 1.."),
        (
            {"allocator": "jemalloc", "tunables": {"dirty_decay": 5000}},
            "tunables.dirty_decay: jemalloc says no option 'dirty_decay'",
        ),
        ({"allocator": "jemalloc", "tunables": {"narenas": "many"}}, "tunables.narenas: jemalloc says a bad value for 'narenas'"),
        ({"allocator": "mimalloc", "tunables": {"eager": 1}}, "tunables.eager: mimalloc has no option 'eager'"),
        ({"allocator": "tcmalloc", "tunables": {"release": 1}}, "tunables.release: tcmalloc has no option 'release'"),
        (
            {"allocator": "jemalloc", "tunables": {"narenas": 2}, "env": {"MALLOC_CONF": "narenas:4"}},
            "MALLOC_CONF is what tunables write",
        ),
        (
            {"allocator": "jemalloc", "tunables": {"narenas": "2,junk:true"}},
            "tunables.narenas: '2,junk:true' is not a plain value",
        ),
    ],
)
def test_a_wrong_tunable_is_refused_before_anything_runs(variant: dict[str, Any], message: str) -> None:
    if "allocator" in variant:
        needs(variant["allocator"])
    with pytest.raises(SpecError) as caught:
        prepared_env(**variant)
    assert message in str(caught.value)


def test_the_quick_form_and_the_cli_refuse_a_misspelt_tunable_with_exit_2() -> None:
    needs("jemalloc")
    proc = cli("compare", "--cmd", "true", "-V", "a", "-V", "je: allocator=jemalloc tunables.dirty_decay=5", "-n", "2")
    assert proc.returncode == 2 and "jemalloc says no option 'dirty_decay'" in proc.stderr
    assert proc.stderr.count("\n") == 1  # one line, no traceback


def test_a_preload_that_did_not_take_or_a_rejected_option_fails_the_run() -> None:
    needs("jemalloc")
    variants = [
        "-V",
        "plain",
        "-V",
        "broken: env.LD_PRELOAD=/nonexistent/libmalloc.so",
        "-V",
        "je: allocator=jemalloc wrapper='env MALLOC_CONF=bogus:1'",  # past benchlab's own check of MALLOC_CONF
    ]
    proc = cli("compare", "--cmd", "ls /", *variants, "-n", "2", "--name", "preload", "--format", "json")
    assert proc.returncode == 5, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    by_variant = {v: {r["status"] for r in runs if r["variant"] == v} for v in ("plain", "broken", "je")}
    assert by_variant == {"plain": {"ok"}, "broken": {"failed"}, "je": {"failed"}}
    messages = {r["variant"]: r["message"] for r in runs if r["status"] == "failed"}
    assert "/nonexistent/libmalloc.so" in messages["broken"] and "Invalid conf pair: bogus:1" in messages["je"]
    refused = cli("compare", "--cmd", "ls /", "-V", "je: allocator=jemalloc env.MALLOC_CONF=bogus:1", "-n", "2")
    assert refused.returncode == 2 and "variants[0].env.MALLOC_CONF.bogus" in refused.stderr, refused.stderr  # before running


def test_each_run_records_the_allocator_it_mapped_and_a_dropped_preload_fails(tmp_path: Path) -> None:
    needs("jemalloc")
    # the wrapper drops LD_PRELOAD for the dropped variant only: the loader never complains, the maps tell
    spec = tmp_path / "s.toml"
    spec.write_text(
        """name = "mapped"
blocks = 2
[[workloads]]
name = "ls"
command = ["ls", "/"]
[[variants]]
name = "plain"
[[variants]]
name = "je"
allocator = "jemalloc"
tunables = { narenas = 2 }
[[variants]]
name = "dropped"
allocator = "jemalloc"
wrapper = ["env", "-u", "LD_PRELOAD"]
"""
    )
    cli("run", str(spec), "--allow-failures", check=True)
    runs = json.loads(cli("report", "mapped", "--format", "json", check=True).stdout)["runs"]
    by_variant = {r["variant"]: r for r in runs}
    assert by_variant["plain"]["details"]["allocator"] == "glibc"
    assert by_variant["je"]["details"]["allocator"] == "jemalloc"
    assert by_variant["je"]["details"]["options"] == {"MALLOC_CONF": "narenas:2"}
    dropped = by_variant["dropped"]
    assert dropped["status"] == "failed" and "never mapped" in dropped["message"] and "ran glibc's malloc" in dropped["message"]
    # bundles carry the details to another database
    bundle = tmp_path / "b.json"
    cli("export", "mapped", "-o", str(bundle), check=True)
    cli("import", str(bundle), "--db", str(tmp_path / "other.db"), check=True)
    again = json.loads(cli("report", "mapped", "--db", str(tmp_path / "other.db"), "--format", "json", check=True).stdout)
    assert {r["variant"]: r["details"] for r in again["runs"]} == {r["variant"]: r["details"] for r in runs}
