"""A fleet task's environment: an allow-list of variable names, never one that makes an allowed
program run code. With only `--allow git`, `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor
GIT_CONFIG_VALUE_0='touch /tmp/PWNED; false'` ran a shell command on the worker."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchlab.fleet.allowlist import DEFAULT_ENV, AllowList, Refused
from benchlab.fleet.worker import BlockWorker, WorkerSettings
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from tests.conftest import need
from tests.hostile.conftest import refused
from tests.unit.test_fleet_worker import KEY, _envelope

# each makes a common program run code of its value's choosing
DANGEROUS = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "touch /tmp/PWNED; false",
    "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='touch /tmp/PWNED'",
    "GIT_SSH_COMMAND": "touch /tmp/PWNED",
    "GIT_EXTERNAL_DIFF": "/tmp/evil",
    "GIT_DIR": "/tmp/evil-repo",
    "JAVA_TOOL_OPTIONS": "-javaagent:/tmp/evil.jar",
    "_JAVA_OPTIONS": "-javaagent:/tmp/evil.jar",
    "JDK_JAVA_OPTIONS": "-javaagent:/tmp/evil.jar",
    "LUA_INIT": "os.execute('touch /tmp/PWNED')",
    "LUA_INIT_5_4": "os.execute('touch /tmp/PWNED')",
    "OPENSSL_CONF": "/tmp/evil.cnf",
    "OPENSSL_ENGINES": "/tmp/engines",
    "PERL5DB": "system('touch /tmp/PWNED')",
    "PERL5OPT": "-Mevil",
    "PYTHONBREAKPOINT": "os.system",
    "PYTHONWARNINGS": "ignore::evil.Warning",
    "NODE_OPTIONS": "--require /tmp/evil.js",
    "RUBYOPT": "-revil",
    "LD_PRELOAD": "/tmp/evil.so",
    "LD_AUDIT": "/tmp/evil.so",
    "HOME": "/tmp/evil-home",
    "XDG_CONFIG_HOME": "/tmp/evil-config",
    "BASH_ENV": "/tmp/evil.sh",
    "PATH": "/tmp/evil",
    "OMP_TOOL_LIBRARIES": "/tmp/evil.so",
    # found by a later audit: each passed an operator's bare `*`
    "DOTNET_STARTUP_HOOKS": "/tmp/evil.dll",
    "PYTHONPYCACHEPREFIX": "/tmp/evil-cache",
    "ZDOTDIR": "/tmp/evil-zsh",
    "HGRCPATH": "/tmp/evil.hgrc",
    "PHPRC": "/tmp/evil.ini",
    "R_PROFILE_USER": "/tmp/evil.R",
    "TCLLIBPATH": "/tmp/evil-tcl",
    "JULIA_DEPOT_PATH": "/tmp/evil-depot",
    "RUSTC_WRAPPER": "/tmp/evil",
    "LOCPATH": "/tmp/evil-locales",
    "MAKEFLAGS": "SHELL=/tmp/evil",
    "CC": "/tmp/evil",
    "CFLAGS": "-fplugin=/tmp/evil.so",
    "MAVEN_OPTS": "-javaagent:/tmp/evil.jar",
    "LESSOPEN": "|/tmp/evil %s",
}


def _spec(env: dict[str, str], command: list[str], cwd: str | None = None) -> dict[str, object]:
    workload: dict[str, object] = {"name": "t", "command": command, **({"cwd": cwd} if cwd else {})}
    return {"name": "fleet-exp", "blocks": 2, "warmup": 0, "workloads": [workload], "variants": [{"name": "a", "env": env}]}


@pytest.mark.parametrize("name", DANGEROUS)
def test_each_variable_that_runs_code_is_refused_even_by_an_operator_pattern(name: str) -> None:
    git = need("git")
    spec = spec_from_dict(_spec({name: DANGEROUS[name]}, [git, "status"]), "t")
    # the second as if an operator's pattern covered every name (no pattern may: see below)
    everything = AllowList(frozenset(AllowList.of([git]).programs), shell=True, machine_state=True, env=frozenset({"*"}))
    for allowed in (AllowList.of([git]), everything):
        with pytest.raises(Refused, match=f"env sets {name}, which would make the run load or run code"):
            allowed.check(spec)


def test_a_name_off_the_list_is_refused_and_the_operator_can_allow_it() -> None:
    spec = spec_from_dict(_spec({"ZSTD_CLEVEL": "3", "MALLOC_ARENA_MAX": "2", "LC_ALL": "C"}, ["/usr/bin/true"]), "t")
    with pytest.raises(Refused, match="sets ZSTD_CLEVEL, which is not on this worker's --allow-env list"):
        AllowList.of(["/usr/bin/true"]).check(spec)
    AllowList.of(["/usr/bin/true"], env=["ZSTD_CLEVEL"]).check(spec)
    AllowList.of(["/usr/bin/true"], env=["ZSTD_*"]).check(spec)
    assert "GLIBC_TUNABLES" in DEFAULT_ENV and not any(n.startswith("LD_") for n in DEFAULT_ENV)


def test_git_fsmonitor_through_the_environment_runs_nothing_on_a_worker(tmp_path: Path) -> None:
    """The audit's case, with a real git and the worker's real executor: git itself runs the
    command (the control), a worker allowing only git refuses the task and nothing runs."""
    git = need("git")
    repo = tmp_path / "repo"
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    control, pwned = tmp_path / "CONTROL", tmp_path / "PWNED"
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": f"touch {control}; false"}
    subprocess.run([git, "status"], cwd=repo, env={**os.environ, **env}, capture_output=True)
    assert control.exists(), "git no longer runs core.fsmonitor from GIT_CONFIG_*: this test proves nothing"
    env["GIT_CONFIG_VALUE_0"] = f"touch {pwned}; false"
    db = str(tmp_path / "fleet.db")
    raw = _spec(env, [git, "status"], cwd=str(repo))
    Runner(Store(db)).open_experiment(Prepared.from_spec(spec_from_dict(raw, "t")), resume=False)
    settings = WorkerSettings(pool="lab", db=db, key=KEY, allow=AllowList.of([git]), name="w1")
    worker = BlockWorker(settings, fingerprint=lambda: {"hostname": "h1", "kernel": "test"})
    with pytest.raises(Refused, match="GIT_CONFIG_COUNT"):
        worker.handle(_envelope(db, "t", 0))
    assert not pwned.exists()


@pytest.mark.parametrize(
    "entry", ["LD_PRELOAD", "LD_*", "GIT_CONFIG_COUNT", "GIT_*", "PYTHONPATH", "BAD NAME", "A=B", "*", "P*", "PY*", "Z*"]
)
def test_a_worker_refuses_to_allow_a_variable_that_runs_code(tmp_path: Path, entry: str) -> None:
    key = tmp_path / "key"
    key.write_bytes(os.urandom(48).hex().encode())
    key.chmod(0o600)
    refused(
        "worker", "--pool", "lab", "--broker", "amqp://u:p@127.0.0.1:1/v", "--key", str(key), "--allow-env", entry,
        mentions="--allow-env",
    )  # fmt: skip


def test_an_allocator_tunable_naming_a_path_is_refused() -> None:
    """jemalloc's `prof_prefix` makes a root process write heap profiles wherever the spec says."""
    raw = _spec({}, ["/usr/bin/true"])
    raw["variants"] = [{"name": "a", "allocator": "jemalloc", "tunables": {"prof": True, "prof_prefix": "/etc/cron.d/x"}}]
    with pytest.raises(Refused, match="tunables.prof_prefix names a path"):
        AllowList.of(["/usr/bin/true"]).check(spec_from_dict(raw, "t"))
