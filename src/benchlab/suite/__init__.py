"""The CPU suite as benchlab sees it: which workloads make it up, how a spec names it,
and how runs become Geekbench-style scores against a fixed baseline."""
