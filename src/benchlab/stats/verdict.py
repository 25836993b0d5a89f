"""From a change, its intervals and its adjusted p to a verdict a reader can act on."""

from __future__ import annotations

import math

from scipy import special

from benchlab.stats.families import shares
from benchlab.terms import BETTER, FIRST_LOOK, NOT_JUDGED, PRIMARY, SAME, SECONDARY, SMALL_N, UNCLEAR, WORSE

DECIDED = (BETTER, WORSE, SAME)
MAX_RUNS_NEEDED = 100_000


def verdict(*, direction: str, ci: tuple[float, float], ci90: tuple[float, float], margin: float) -> str:
    """better/worse: the interval shown (at the row's corrected level, see judge.decide) excludes
    zero, which happens exactly when the corrected test decides; same: the 90% CI inside +-margin
    (two one-sided tests); anything else is unclear, never silently 'same'."""
    if direction == "none":
        return NOT_JUDGED
    lo, hi = ci
    if not math.isnan(lo) and (lo > 0 or hi < 0):
        return WORSE if (lo > 0) == (direction == "lower") else BETTER
    lo90, hi90 = ci90
    if not math.isnan(lo90) and -margin < lo90 and hi90 < margin:
        return SAME
    return UNCLEAR


POWER = 0.8  # "would likely decide": the blocks at which the row decides four times in five


def blocks_needed(
    *, n: int, effect: float, spread: float, margin: float, level: float, same_level: float, paired: bool
) -> int | None:
    """Blocks that would decide an unclear row with 80% probability, if its effect and the
    spread of its differences are what they seem so far (both on the scale it is tested on).

    The test actually used at each n is accounted for: the paired t's critical value below
    SMALL_N pairs; from there the signed-rank test, which needs 2^(1-n) <= level before it
    can reject at all, at its asymptotic efficiency of 3/pi against the t (normal noise).
    `level` is the row's share of alpha within its family; 'same' needs the 90% (TOST)
    interval inside the margin, one-sided at `same_level`. None when nothing in reach
    (MAX_RUNS_NEEDED blocks) would decide it.
    """
    if n < 2 or not all(map(math.isfinite, (effect, spread))) or spread <= 0:
        return None
    z = special.ndtri(POWER)
    efficiency = 1.0 if paired else 0.5  # two samples of N: the variance of a difference doubles

    def decides(blocks: int) -> bool:
        if blocks < SMALL_N:
            crit, crit_same, eff = special.stdtrit(blocks - 1, 1 - level / 2), special.stdtrit(blocks - 1, 1 - same_level), 1.0
        else:
            if 2.0 ** (1 - blocks) > level:
                return False
            crit, crit_same, eff = special.ndtri(1 - level / 2), special.ndtri(1 - same_level), 3 / math.pi
        se = spread / math.sqrt(blocks * eff * efficiency)
        if abs(effect) / se >= crit + z:
            return True
        return abs(effect) < margin and (margin - abs(effect)) / se >= crit_same + z

    for blocks in range(n + 1, max(SMALL_N, n + 1) + 1):
        if decides(blocks):
            return blocks
    low, high = max(SMALL_N, n + 1), max(SMALL_N, n + 1)
    while not decides(high):
        low, high = high, high * 2
        if high > MAX_RUNS_NEEDED:
            return None
    while high - low > 1:  # decides() is monotone from SMALL_N on
        mid = (low + high) // 2
        low, high = (low, mid) if decides(mid) else (mid, high)
    return high


def plan_warning(blocks: int, alpha: float, builtins: list[str | None]) -> str | None:
    """Said before running when the planned blocks cannot decide: fewer than 3, or, from 6 on
    (the signed-rank test), too few for its smallest p, 2^(1-n), to reach the level each
    workload's primary family gets once alpha is shared (the CPU suite's workloads are one
    family, their scores)."""
    if blocks < FIRST_LOOK:
        return f"{blocks} blocks cannot decide anything: the paired t-test used below {SMALL_N} blocks needs {FIRST_LOOK}"
    families = sum(1 for b in builtins if not (b or "").startswith("cpu.")) + any((b or "").startswith("cpu.") for b in builtins)
    level = shares(alpha, [PRIMARY] * families + [SECONDARY] * families)[0]
    if blocks < SMALL_N or 2.0 ** (1 - blocks) <= level:
        return None
    need = math.ceil(1 - math.log2(level))
    return (
        f"{blocks} blocks cannot decide: from {SMALL_N} blocks on the signed-rank test's smallest p is 2^(1-n) = "
        f"{2.0 ** (1 - blocks):.2g}, above the {level:.2g} each of {families} workloads' primary metrics get; "
        f"run {need} blocks or more, {FIRST_LOOK}-{SMALL_N - 1} (paired t-test), or --until-decided"
    )
