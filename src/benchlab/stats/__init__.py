"""Statistics: estimators, tests, corrections, verdicts and the experiment-level analysis."""
