"""Data shipped with the tool: the signature index the diagnosis engine uses without a build."""
