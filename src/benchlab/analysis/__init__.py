"""Analysis: the statistics applied to what the lab stored. Each module here reads the store, the
spec, the suite or the host and hands the pure core (`benchlab.stats`) arrays: an experiment's
report (`analyze`), a diff of two stored sides, a history of many experiments, CPU scores, sweeps
and per-host calibration; each returns the report model (`benchlab.report_model`)."""
