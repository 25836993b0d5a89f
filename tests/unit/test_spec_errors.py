"""Malformed specs: one line naming the place, exit code 2, nothing run, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.spec.fields import _one_line
from tests.conftest import cli

GOOD = """
name = "ok"
[[workloads]]
name = "t"
command = ["true"]
[[variants]]
name = "a"
"""

BAD = {
    "unknown top key": ('name = "x"\nblockz = 3\n[[workloads]]\nname="t"\ncommand=["true"]\n[[variants]]\nname="a"\n', "blockz"),
    "bad allocator": (GOOD + '[[variants]]\nname = "b"\nallocator = "jemaloc"\n', "variants[1].allocator"),
    "two kinds": (
        'name = "x"\n[[workloads]]\nname="t"\ncommand=["true"]\nbuiltin="alloc.churn"\n[[variants]]\nname="a"\n',
        "workloads[0]",
    ),
    "missing binary": (
        'name = "x"\n[[workloads]]\nname="t"\ncommand=["no-such-program-xyz"]\n[[variants]]\nname="a"\n',
        "workloads[0].command",
    ),
    "unknown builtin": (
        'name = "x"\n[[workloads]]\nname="t"\nbuiltin="cpu.nothing"\n[[variants]]\nname="a"\n',
        "workloads[0].builtin",
    ),
    "unknown option": (
        'name = "x"\n[[workloads]]\nname="t"\nbuiltin="alloc.churn"\noptions={thread=2}\n[[variants]]\nname="a"\n',
        "options.thread",
    ),
    "bad toml": ('name = "x\n', "not valid TOML"),
    "blocks too few": (GOOD.replace('name = "ok"', 'name = "ok"\nblocks = 1'), "blocks"),
    "bad baseline": (GOOD.replace('name = "ok"', 'name = "ok"\nbaseline = "zz"'), "baseline"),
    "duplicate variant": (GOOD + '[[variants]]\nname = "a"\n', "two variants"),
    "knob outside sys": (GOOD + '[[variants]]\nname = "b"\nknobs = { "/etc/passwd" = "x" }\n', "variants[1].knobs"),
    "knob with dotdot": (GOOD + '[[variants]]\nname = "b"\nknobs = { "/proc/sys/../../etc/passwd" = "x" }\n', "'..'"),
    "bad cpus": (GOOD + '[[variants]]\nname = "b"\ncpus = "3-1"\n', "variants[1].cpus"),
    "cpu not here": (GOOD + '[[variants]]\nname = "b"\ncpus = [4096]\n', "variants[1].cpus"),
    "wrong type": (GOOD.replace('name = "ok"', 'name = "ok"\nblocks = "ten"'), "blocks"),
    "missing gbench": ('name = "x"\n[[workloads]]\nname="g"\ngbench="./nope"\n[[variants]]\nname="a"\n', "workloads[0].gbench"),
    "missing cwd": (
        'name = "x"\n[[workloads]]\nname="t"\ncommand=["true"]\ncwd="/no/such/dir"\n[[variants]]\nname="a"\n',
        "workloads[0].cwd",
    ),
    "empty workloads": ('name = "x"\nworkloads = []\n[[variants]]\nname="a"\n', "workloads"),
    "unknown environment": (GOOD + '[[variants]]\nname = "b"\nenvironment = "moon"\n', "variants[1].environment"),
    "limits outside a container": (
        GOOD + '[[variants]]\nname = "b"\nenvironment = { kind = "local", cpus = 1 }\n',
        "apply to a container environment",
    ),
    "ssh without a host": (GOOD + '[[variants]]\nname = "b"\nenvironment = "ssh://"\n', "needs a host"),
    "bad memory size": (
        GOOD + '[[variants]]\nname = "b"\nenvironment = { kind = "container", memory = "lots" }\n',
        "not a size",
    ),
    "knobs on a remote host": (
        GOOD + '[[variants]]\nname = "b"\nenvironment = "ssh://lab"\nknobs = { "/proc/sys/vm/swappiness" = "10" }\n',
        "cannot apply to a remote host",
    ),
    "negative shim sampling": (GOOD + '[[variants]]\nname = "b"\nshim = { sampling = -1 }\n', "variants[1].shim.sampling"),
    "misspelt shim setting": (GOOD + '[[variants]]\nname = "b"\nshim = { sample = 10 }\n', "variants[1].shim.sample"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_spec_is_one_line_exit_2(case: str, tmp_path: Path) -> None:
    text, expected = BAD[case]
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    proc = cli("run", str(spec))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr
    assert cli("list").stdout.count(" x ") == 0  # nothing was stored


def test_quick_form_errors_name_the_flag() -> None:
    proc = cli("compare", "-w", "alloc.churn", "--variant", "je: alocator=jemalloc")
    assert proc.returncode == 2 and "alocator" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = cli("compare", "--variant", "a")
    assert proc.returncode == 2 and "at least one workload" in proc.stderr


def test_missing_allocator_names_the_debian_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchlab.errors import SpecError
    from benchlab.variants import allocator

    monkeypatch.setattr(allocator, "find_library", lambda name: None)
    with pytest.raises(SpecError, match="apt-get install libjemalloc2"):
        allocator.preload_for("jemalloc", "variants[1].allocator")


def test_unreachable_database_is_one_line() -> None:
    proc = cli("list", "--db", "postgresql://nobody@127.0.0.1:1/none")
    assert proc.returncode == 4 and len(proc.stderr.strip().splitlines()) == 1 and "cannot open" in proc.stderr


def test_environments_from_their_short_forms() -> None:
    from benchlab.spec.models import EnvironmentSpec

    assert EnvironmentSpec.model_validate("container").kind == "container"
    remote = EnvironmentSpec.model_validate("ssh://root@10.0.0.2:2222")
    assert (remote.kind, remote.host, remote.port, remote.label) == ("ssh", "root@10.0.0.2", 2222, "ssh://root@10.0.0.2")
    assert EnvironmentSpec.model_validate({"kind": "container", "memory": "1.5G"}).memory == 3 << 29
    assert EnvironmentSpec.model_validate({"kind": "container", "memory": "64MiB"}).memory == 64 << 20


@pytest.mark.parametrize("char", ["\x1b", "\n", "\x7f", "\x85", "\x9f"])
def test_a_line_with_any_control_character_is_refused(char: str) -> None:
    with pytest.raises(ValueError, match="control character"):
        _one_line(f"a{char}b")


@pytest.mark.parametrize("text", ["plain", "a\u00a0b", "right\u202eleft", "tab-free \u2028 separator", ""])
def test_a_line_that_is_not_printable_but_holds_no_control_is_kept(text: str) -> None:
    """str.isprintable is only the quick way through: text it calls unprintable is still looked at
    character by character, and kept when no character is a control."""
    assert _one_line(text) == text
