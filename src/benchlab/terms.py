"""The words a report's rows are written in, and the thresholds that pick them: a metric's family,
a verdict, the test a comparison got, a score section's title. The statistics core decides them,
the analysis writes them into the report model, and the renderers explain them; kept at the
bottom of the stack, plain constants, so that the core stays pure and a renderer reads the
report model without reaching into the statistics or the suite."""

from __future__ import annotations

# the families a metric's comparison is corrected in (stats/families.py says which is which)
PRIMARY, SECONDARY, CHARACTERISTIC, SCORED, GEOMEAN = "primary", "secondary", "characteristic", "scored", "geomean"

# a row's verdict (stats/verdict.py); NOT_JUDGED: a characteristic, shown without one
BETTER, WORSE, SAME, UNCLEAR, NOT_JUDGED = "better", "worse", "same", "unclear", "-"

# Which test a paired comparison gets, by its number of pairs: from FIRST_LOOK pairs the paired t
# (labelled PARAMETRIC in the report), from SMALL_N the exact signed-rank test. Apart from the
# tests themselves (scipy), so that a report can say why a row has no interval without loading them.
FIRST_LOOK = 3  # the fewest pairs any test decides from
SMALL_N = 6  # from this many pairs on, the exact signed-rank test; below it, the paired t
PARAMETRIC = "t (parametric)"

# the CPU suite's sections as a score row names them (suite/baseline.py's SECTIONS)
SECTION_TITLES = {"crypto": "Crypto", "integer": "Integer", "floating_point": "Floating Point"}
