"""The CPU suite as benchlab sees it: which workloads make it up and how a spec names it
(`cpu`), and the fixed baseline its scores are measured against (`baseline`); the scores
themselves are judged in `analysis.scores`."""
