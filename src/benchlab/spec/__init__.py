"""Experiment specs: models (`models`), reading spec files (`load`), validation (`validate`) and the
spec-free quick form (`quick`). Nothing is imported here: a command that only needs a name's
pattern or a file's TOML must not pay for building every pydantic model."""
