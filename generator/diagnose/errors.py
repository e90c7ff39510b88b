"""The errors `trainwreck diagnose` reports as messages (exit status 2), never as tracebacks."""

from __future__ import annotations


class DiagnoseError(Exception):
    """Base of every error the diagnosis reports as a message."""


class InputError(DiagnoseError):
    """A log cannot be read: missing, binary, empty or corrupt."""


class SignatureIndexError(DiagnoseError):
    """The signature index cannot be read."""


class MatcherError(DiagnoseError):
    """The requested candidate matcher is not installed or cannot compile the index."""


class OutputError(DiagnoseError):
    """A file the diagnosis was asked to write (a redacted excerpt) cannot be written."""
