"""Which test a paired comparison gets, by its number of pairs: from FIRST_LOOK pairs the paired t
(labelled PARAMETRIC in the report), from SMALL_N the exact signed-rank test. Kept apart from the
tests themselves (scipy) so that a report can say why a row has no interval without loading them:
every command that draws a table imports the report package."""

from __future__ import annotations

FIRST_LOOK = 3  # the fewest pairs any test decides from
SMALL_N = 6  # from this many pairs on, the exact signed-rank test; below it, the paired t
PARAMETRIC = "t (parametric)"
