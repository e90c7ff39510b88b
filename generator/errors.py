"""The exceptions the CLI reports as messages rather than tracebacks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


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

    def annotation(self, level: Literal["error", "warning"]) -> str:
        """Return the problem as a GitHub Actions workflow command, shown on its line of the pull request."""
        properties = [f"file={_escape_property(self.path)}"]
        if self.line:
            properties.append(f"line={self.line}")
            if self.column:
                properties.append(f"col={self.column}")
        if self.field:
            properties.append(f"title={_escape_property(self.field)}")
        message = f"{self.message} (hint: {self.hint})" if self.hint else self.message
        return f"::{level} {','.join(properties)}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    # GitHub's runner decodes exactly these in a command's message; `%` first, or its own escapes would be doubled.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # In a property value `:` would end the properties and `,` would start the next one.
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def tally(problems: Iterable[Problem]) -> str:
    """Return `Found N problem(s) in M file(s)`, the start of every closing line that counts problems."""
    found = list(problems)
    noun = "problem" if len(found) == 1 else "problems"
    return f"Found {len(found)} {noun} in {len({p.path for p in found})} file(s)"


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
        lines.append(f"{tally(self.problems)}; nothing was written.")
        return "\n".join(lines)


class StrictModeError(TrainwreckError):
    """Warnings were raised while building with --strict."""

    def __init__(self, warnings: list[Problem]) -> None:
        self.warnings = warnings
        super().__init__(f"Aborted with {len(warnings)} warning(s) in strict mode")


class BuildError(TrainwreckError):
    """The site could not be written (output folder, search index, I/O)."""
