"""benchlab: a lab for system performance experiments on Linux."""

__version__ = "0.1.0"
