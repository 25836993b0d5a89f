"""The command line's grammar: argparse, with click's conventions (no abbreviated flags, `--help`
on every command, a group given no command prints its help) and one-line refusals.

Why argparse and not typer: the command line is started for every refusal and every `--help`,
and importing typer (with the click it vendors) costs 50-65 ms of CPU here, four times a bare
`python -c pass`; argparse is already loaded by the interpreter's own tools and costs ~1 ms. A
command's module declares its options here and imports what it runs with when it runs
(bench/startup.py prints what each command's start costs).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence

from benchlab.errors import SpecError

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NoReturn

Handler = Callable[..., object]
Container = argparse._ActionsContainer  # a parser or a section of one: where options are added


def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size` finds it ($COLUMNS, then stdout's
    terminal, else 80). argparse imports shutil (and with it bz2, lzma and fnmatch, 5 ms) to ask,
    for every parser it builds, whenever no width is given."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80 if sys.__stdout__ else 80
    except (AttributeError, ValueError, OSError):
        return 80


class Help(argparse.RawDescriptionHelpFormatter):
    """Help as click lays it out (`Usage:`, `Options:`), with each option's default after its
    help where it has one worth saying (not off, empty or none)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=_columns() - 2)

    def add_usage(self, usage: str | None, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if isinstance(action, argparse._SubParsersAction):  # the commands, without a line naming their metavar
            text = text.split("\n", 1)[1]
        return text

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        unsaid = default is None or default is False or default == [] or default == argparse.SUPPRESS
        if action.option_strings and not unsaid and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """A parser whose refusals are `SpecError`s (exit 2, one line at the edge), never argparse's
    usage-and-exit, so that they read as every other refusal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"formatter_class": Help, "allow_abbrev": False, **kwargs})
        self._positionals.title = "Arguments"
        self._optionals.title = "Options"

    def error(self, message: str) -> NoReturn:
        raise SpecError(message)


def _escaped(text: str) -> str:
    """Help text as argparse reads it: `%` is its formatting character."""
    return text.replace("%", "%%")


def summary(handler: Handler) -> str:
    """A command's line in the list of commands: its docstring's first paragraph."""
    first = (handler.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines())


def description(handler: Handler) -> str:
    """A command's whole docstring, for its own --help."""
    import textwrap  # for the one command built whole

    first, _, rest = (handler.__doc__ or "").strip().partition("\n")
    return f"{first}\n{textwrap.dedent(rest)}".strip()


class Commands:
    """The subcommands of one parser (`benchlab`, `benchlab ipc`). Only the command the words name
    is built whole (its options declared); every other one is listed by name and summary alone.
    argparse builds a parser in about a millisecond (its gettext look-ups for every label), and
    the command line has thirty: declaring them all would cost more than the interpreter's own
    start. `wanted` is the words after this parser's own; None builds every command (for the
    tests and docs that walk them all)."""

    def __init__(self, parser: Parser, wanted: Sequence[str] | None = None) -> None:
        self.parser, self.wanted = parser, wanted
        self.sub = parser.add_subparsers(title="Commands", metavar="COMMAND", dest="_command")
        parser.set_defaults(_handler=None, _parser=parser)

    def _builds(self, name: str) -> bool:
        return self.wanted is None or (bool(self.wanted) and self.wanted[0] == name)

    def _listed(self, name: str, said: str) -> None:
        """A command named in the list (and accepted as a choice) without a parser of its own:
        argparse asks for a command's parser only when the words name it, and those are built."""
        self.sub._choices_actions.append(argparse._SubParsersAction._ChoicesPseudoAction(name, (), _escaped(said)))
        self.sub._name_parser_map[name] = self.parser  # never reached: a command the words name is built

    def command(self, name: str, handler: Handler, declare: Callable[[Parser], object] | None = None) -> None:
        """A command running `handler` with its options (`declare`d on its parser) as keyword
        arguments: each option's `dest` names a parameter."""
        if not self._builds(name):
            self._listed(name, summary(handler))
            return
        parser: Parser = self.sub.add_parser(name, help=_escaped(summary(handler)), description=_escaped(description(handler)))
        parser.set_defaults(_handler=handler, _parser=parser)
        if declare is not None:
            declare(parser)

    def group(self, name: str, said: str, declare: Callable[[Commands], None]) -> None:
        """A command of commands (`benchlab db upgrade`), `said` in one line; given none, it prints its help."""
        if not self._builds(name):
            self._listed(name, said)
            return
        parser: Parser = self.sub.add_parser(name, help=_escaped(said), description=_escaped(said))
        declare(Commands(parser, None if self.wanted is None else self.wanted[1:]))


def option(parser: Container, *flags: str, help: str, **kwargs: Any) -> None:
    parser.add_argument(*flags, help=_escaped(help), **kwargs)


def switch(parser: Container, *flags: str, help: str) -> None:
    """An on/off flag, off unless given."""
    parser.add_argument(*flags, action="store_true", help=_escaped(help))


def repeated(parser: Container, *flags: str, help: str, metavar: str | None = None, type: Callable[[str], object] = str) -> None:
    """An option given any number of times, its values in order (none: an empty list)."""
    parser.add_argument(*flags, action="append", default=[], metavar=metavar, type=type, help=_escaped(help))


def file_path(value: str) -> Path:
    """A file named on the command line (pathlib loads with the first one: a few milliseconds
    that a help or a refusal of another option never pays)."""
    from pathlib import Path

    return Path(value)


def whole_number(value: str) -> int:
    """An integer option read as a spec reads one, never coerced: ASCII digits with at most a
    leading `-` (which the option's own range then refuses). Python's int() would take `' 3'`,
    `+3`, `1_0` (ten) and other scripts' digits; a typo must not become a count."""
    if not re.fullmatch(r"-?[0-9]{1,18}", value):
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a whole number (digits only)")
    return int(value)


def number(value: str) -> float:
    """A decimal option: what float() reads, a typo refused in the words of `whole_number`."""
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a number") from None


def count(parser: Container, *flags: str, help: str, default: int | None = None) -> None:
    """A count: read by `whole_number`, so `3.0`, `+3` and `1_0` are refused as a spec would refuse them."""
    parser.add_argument(*flags, type=whole_number, metavar="INTEGER", default=default, help=_escaped(help))


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command and subcommand built in `parser` (all of them in `benchlab.cli.parser()`), by
    its full name (`ipc latency`), for the tests and docs that read them all."""
    found = [(" ".join(path), parser)] if path else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += walk(sub, (*path, name))
    return found


def parse(parser: Parser, argv: Sequence[str]) -> tuple[Handler | None, Parser, dict[str, Any]]:
    """The handler the words name, the parser that read them (for its help) and its keyword
    arguments."""
    values = vars(parser.parse_args(argv))
    handler, chosen = values.pop("_handler"), values.pop("_parser")
    return handler, chosen, {k: v for k, v in values.items() if not k.startswith("_")}


def print_help_and_exit(parser: Parser) -> NoReturn:
    """A command of commands given none: its help on stderr, exit 2, as click does."""
    parser.print_help(sys.stderr)
    sys.exit(2)
