"""Allow `python -m generator`."""

from generator.cli import run

run()
