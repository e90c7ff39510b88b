"""Trainwreck: build the ML failure encyclopedia from YAML entries."""

__version__ = "0.1.0"
