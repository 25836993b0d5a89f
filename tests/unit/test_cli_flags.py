"""A short flag means one thing in every command: a user who learnt `-v` in one command must not
find it naming a variant in another."""

from __future__ import annotations

from typing import Any

import typer

from benchlab.cli import app

# the meanings decided once for all commands; a short flag not listed still has one meaning
DECIDED = {"-v": "--verbose", "-V": "--variant", "-n": "--blocks", "-w": "--workload", "-f": "--format"}


def short_flags() -> dict[str, set[tuple[str, str]]]:
    """Each single-dash flag -> {(its long name, the command that has it)}."""
    found: dict[str, set[tuple[str, str]]] = {}

    def walk(command: Any, path: str) -> None:
        for param in command.params:
            if param.param_type_name != "option":
                continue
            names = [*param.opts, *param.secondary_opts]
            long = "/".join(sorted(n for n in names if n.startswith("--")))
            for short in (n for n in names if not n.startswith("--")):
                found.setdefault(short, set()).add((long, path))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
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
