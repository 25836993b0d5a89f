"""benchlab reads its native parts (the probe, the shim, the remote side) only through
versioned JSON fields: no Python code matches the words they write for people, so those
words are free to change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem, WorkloadFailed
from benchlab.measure.account import ACCOUNT_PROTOCOL, Account
from benchlab.measure.process import Launch, finished_from_account

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sorted((ROOT / "src" / "benchlab").rglob("*.py"))
# what the probe, the launcher and the shim write for people: eprintln! lines, the shim's lines without
# allocation, and the messages made ahead for a child to write (a failed exec's: named for their program)
HUMAN = re.compile(r'eprintln!\(\s*"((?:[^"\\]|\\.)*)"|\.text\(b"((?:[^"\\]|\\.)*)"\)|format!\(\s*"(benchlab-(?:[^"\\]|\\.)*)"')
# stderr text taken apart: a prefix, a split, a pattern
PARSING = re.compile(r"stderr\S*\.(startswith|endswith|removeprefix|partition|rpartition|split)\(|re\.\w+\([^)]*stderr")


def human_fragments() -> set[str]:
    """The fixed words of every human message, cut at their placeholders; short ones say too little."""
    fragments = set()
    for source in [*(ROOT / "probe" / "src").rglob("*.rs"), *(ROOT / "probe" / "shim" / "src").rglob("*.rs")]:
        for match in HUMAN.finditer(source.read_text()):
            text = match.group(1) or match.group(2) or match.group(3)
            if '\\"' in text:
                continue  # a JSON line of the shim's report: for benchlab, not for people
            fragments |= {
                part.strip() for part in re.split(r"\{[^}]*\}|\\n", text) if len(part.strip()) >= 10 and " " in part.strip()
            }
    return fragments


def test_the_messages_for_people_are_found() -> None:
    fragments = human_fragments()
    assert any("use-after-free write caught in pid" in f for f in fragments)  # the shim's
    assert "benchlab-probe: note:" in fragments and ": priority inheritance" in fragments  # the probe's
    assert "benchlab-launch: cannot execute" in fragments  # the launcher's, for a failed exec


def test_no_python_code_reads_the_words_of_a_message_for_people() -> None:
    fragments = human_fragments()
    found = [
        f"{path.relative_to(ROOT)}: {fragment!r}" for path in PYTHON for fragment in fragments if fragment in path.read_text()
    ]
    assert found == []


def test_no_python_code_takes_stderr_text_apart() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in PYTHON
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PARSING.search(line)
    ]
    assert found == []


# An account as benchlab-launch writes it (probe/src/launch.rs `Account`), every field present.
ACCOUNT = {
    "protocol": ACCOUNT_PROTOCOL, "wall_ns": 1_500_000, "user_ns": 900_000, "sys_ns": 100_000, "max_rss_kib": 1604,
    "minor_faults": 79, "major_faults": 0, "voluntary_switches": 2, "involuntary_switches": 1, "exit_code": 0,
    "signal": None, "exec_error": None, "counters": {"task_clock_ns": 643738.0}, "counters_note": None,
    "mapped": ["/usr/lib/x86_64-linux-gnu/libc.so.6"], "mapped_note": None, "tree_peak_kib": 2048,
    "tree_peak_note": None, "memory": {"samples": 3, "rss_peak_kib": 1500},
}  # fmt: skip
LAUNCH = Launch(argv=("/bin/true",), env={}, cwd=None, cpus=None, timeout=30)


def test_the_launchers_account_of_another_protocol_is_refused_not_misread() -> None:
    launch = LAUNCH
    assert finished_from_account(dict(ACCOUNT), launch, False, b"", b"", None).ok
    for account in ({**ACCOUNT, "protocol": ACCOUNT_PROTOCOL + 1}, {k: v for k, v in ACCOUNT.items() if k != "protocol"}):
        with pytest.raises(EnvironmentProblem, match=f"account protocol .*, this benchlab reads {ACCOUNT_PROTOCOL}"):
            finished_from_account(account, launch, False, b"", b"", None)


def test_the_account_is_read_field_for_field() -> None:
    finished = finished_from_account(dict(ACCOUNT), LAUNCH, False, b"out", b"", "a note")
    usage = finished.usage
    assert (usage.wall_s, usage.user_s, usage.sys_s) == (0.0015, 0.0009, 0.0001)
    assert (usage.max_rss_kib, usage.minor_faults, usage.voluntary_switches, usage.involuntary_switches) == (1604, 79, 2, 1)
    assert usage.mapped == ("/usr/lib/x86_64-linux-gnu/libc.so.6",) and usage.tree_peak_kib == 2048
    assert usage.counters == {"task_clock_ns": 643738.0} and usage.memory == {"samples": 3, "rss_peak_kib": 1500}
    assert usage.notes == ("a note",) and finished.exit_code == 0 and finished.stdout == b"out"


@pytest.mark.parametrize("field", list(Account.model_fields))
def test_an_account_with_a_field_missing_is_refused_never_read_as_zero(field: str) -> None:
    account = {k: v for k, v in ACCOUNT.items() if k != field}
    expected = "account protocol None" if field == "protocol" else f"malformed account: {field}: Field required"
    with pytest.raises(EnvironmentProblem, match=expected):
        finished_from_account(account, LAUNCH, False, b"", b"", None)


@pytest.mark.parametrize(
    ("field", "value"),
    [("wall_ns", 1.5), ("wall_ns", "1500000"), ("wall_ns", True), ("wall_ns", -1), ("exit_code", "0"),
     ("mapped", [7]), ("counters", {"cycles": "many"}), ("tree_peak_kib", 1.0), ("exec_error", 2)],
)  # fmt: skip
def test_an_account_with_a_field_of_another_type_is_refused(field: str, value: object) -> None:
    with pytest.raises(EnvironmentProblem, match=f"malformed account: {field}"):
        finished_from_account({**ACCOUNT, field: value}, LAUNCH, False, b"", b"", None)


def test_an_account_with_a_field_this_benchlab_does_not_know_is_refused() -> None:
    with pytest.raises(EnvironmentProblem, match="malformed account: cpu_temperature: Extra inputs"):
        finished_from_account({**ACCOUNT, "cpu_temperature": 40}, LAUNCH, False, b"", b"", None)


def test_a_run_killed_at_its_timeout_has_no_account_and_its_timeout_as_wall() -> None:
    finished = finished_from_account(None, LAUNCH, True, b"", b"", None)
    assert finished.timed_out and not finished.ok and finished.usage.wall_s == 30.0
    with pytest.raises(WorkloadFailed, match="reported nothing"):
        finished_from_account(None, LAUNCH, False, b"", b"", None)
