"""The exceptions the CLI reports as messages rather than tracebacks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One authoring problem, located in a source file."""

    path: str
    line: int
    column: int
    field: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}" if self.line else self.path
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class TrainwreckError(Exception):
    """Base class of every error the CLI prints as a message."""


class ContentError(TrainwreckError):
    """The entries, hubs or taxonomy hold one or more problems."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(set(problems))
        super().__init__(f"{len(self.problems)} problem(s) in the content")

    def report(self) -> str:
        """Return every problem on its own line, then a summary line."""
        lines = [str(p) for p in self.problems]
        files = len({p.path for p in self.problems})
        noun = "problem" if len(self.problems) == 1 else "problems"
        lines.append(f"Found {len(self.problems)} {noun} in {files} file(s); nothing was written.")
        return "\n".join(lines)


class StrictModeError(TrainwreckError):
    """Warnings were raised while building with --strict."""

    def __init__(self, warnings: list[Problem]) -> None:
        self.warnings = warnings
        super().__init__(f"Aborted with {len(warnings)} warning(s) in strict mode")


class BuildError(TrainwreckError):
    """The site could not be written (output folder, search index, I/O)."""
