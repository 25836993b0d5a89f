"""The statistics core: estimators, tests, corrections, sequential thresholds, verdicts, fits and
the bisection's search, on arrays and plain values only. It imports numpy, scipy and the bottom
layer (`metrics`, `errors`, `escapes`, `notes`) and nothing else, so it can be read and tested without a database or a
machine (a contract in pyproject.toml says so); what reads the store, the spec or the suite and
fills the report model is `benchlab.analysis`."""
