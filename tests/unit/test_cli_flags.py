"""A short flag means one thing in every command: a user who learnt `-v` in one command must not
find it naming a variant in another."""

from __future__ import annotations

from benchlab.cli import parser
from benchlab.cli.parser import walk

# the meanings decided once for all commands; a short flag not listed still has one meaning
DECIDED = {"-v": "--verbose", "-V": "--variant", "-n": "--blocks", "-w": "--workload", "-f": "--format"}


def short_flags() -> dict[str, set[tuple[str, str]]]:
    """Each one-letter flag -> {(its long name, the command that has it)}. `ipc latency`'s
    single-dash words (`-pair`, `-trace`) are the Android test's own long flags, not short ones."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path, command in walk(parser()):
        for action in command._actions:
            names = action.option_strings
            long = "/".join(sorted(n for n in names if n.startswith("--")))
            for short in (n for n in names if len(n) == 2):
                found.setdefault(short, set()).add((long, path))
    return found


def test_every_short_flag_has_one_meaning_across_commands() -> None:
    flags = short_flags()
    assert {"-v", "-V", "-n", "-w", "-f"} <= set(flags)
    for short, uses in flags.items():
        meanings = {long for long, _ in uses}
        assert len(meanings) == 1, f"{short} means {sorted(uses)}"
        if short in DECIDED:
            assert meanings == {DECIDED[short]}, f"{short} means {sorted(uses)}, not {DECIDED[short]}"


def test_variant_is_minus_capital_v_wherever_it_is_taken() -> None:
    commands = {command for long, command in short_flags()["-V"] if long == "--variant"}
    assert {"compare", "score"} <= commands
