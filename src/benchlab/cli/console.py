"""The two consoles: results on stdout, progress and errors on stderr.

Both have rich markup off: names, messages and paths are data, and a `[bold]` or `[/]` in
them must print as typed (or, with markup on, crash the print); emoji codes too (`:smile:`). Styles are given as `style=`
or rich Text, and data passes through `benchlab.report.safe` for control characters.
"""

from __future__ import annotations

from rich.console import Console

out = Console(markup=False, emoji=False)
err = Console(stderr=True, markup=False, emoji=False)
