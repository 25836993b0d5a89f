"""The two consoles: results on stdout, progress and errors on stderr, each made when first used
(rich loads only for a command that draws with it, never for a refusal or a help).

Both have rich markup off: names, messages and paths are data, and a `[bold]` or `[/]` in
them must print as typed (or, with markup on, crash the print); emoji codes too (`:smile:`). Styles are given as `style=`
or rich Text, and data passes through `benchlab.report.safe` for control characters.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from rich.console import Console


@functools.cache
def out() -> Console:
    from rich.console import Console

    return Console(markup=False, emoji=False)


@functools.cache
def err() -> Console:
    from rich.console import Console

    return Console(stderr=True, markup=False, emoji=False)
