"""Diagnose logs against the signature index: stream, match, attribute, rank, report."""
