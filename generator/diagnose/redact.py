"""Mask what a log must not share (addresses, hosts, users, tokens), consistently across an excerpt."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from generator.contract import Diagnosis
from generator.diagnose.errors import OutputError

# Order matters: secrets first, so that a token containing digits is not first read as an address.
SECRETS = [
    ("token", re.compile(r"\bhf_[A-Za-z0-9]{20,}\b")),
    ("token", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{12,}")),
    ("token", re.compile(r"(?i)(?<=aws_secret_access_key=)[A-Za-z0-9/+=]{30,}")),
    ("token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
]
IPV4 = re.compile(r"\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b")
IPV6 = re.compile(r"\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}\b")
USER_PATH = re.compile(r"(?<=/home/)[^/\s]+|(?<=/Users/)[^/\s]+|(?<=/scratch/)[^/\s]+")
FQDN = re.compile(r"\b[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+\.(?:com|net|org|io|internal|local|lan|cluster|ai|edu)\b", re.I)


class Redactor:
    """Replace sensitive values with stable placeholders such as host-1 or ip-2."""

    def __init__(self, hosts: set[str] | None = None) -> None:
        self.seen: dict[tuple[str, str], str] = {}
        self.hosts = sorted(hosts or set(), key=len, reverse=True)

    def _name(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self.seen:
            count = sum(1 for k in self.seen if k[0] == kind) + 1
            self.seen[key] = f"{kind}-{count}"
        return self.seen[key]

    def _masker(self, kind: str, shape: str = "{}") -> Callable[[re.Match[str]], str]:
        return lambda m: shape.format(self._name(kind, m.group(0)))

    def line(self, text: str) -> str:
        """Return the line with every sensitive value masked."""
        for kind, pattern in SECRETS:
            text = pattern.sub(self._masker(kind, "<{}>"), text)
        text = IPV4.sub(lambda m: self._name("ip", m.group(0)), text)
        text = IPV6.sub(lambda m: self._name("ip", m.group(0)), text)
        text = USER_PATH.sub(lambda m: self._name("user", m.group(0)), text)
        text = FQDN.sub(lambda m: self._name("host", m.group(0)), text)
        for host in self.hosts:
            text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", self._name("host", host), text)
        return text


def write_excerpt(report: Diagnosis, out: Path) -> None:
    """Write the evidence of every finding, masked, as a text file that is safe to paste in a ticket."""
    hosts = {h for f in report.findings for h in f.hosts}
    redactor = Redactor(hosts)
    lines = ["# trainwreck diagnose excerpt: hosts, addresses, user names and tokens are masked", ""]
    for finding in report.findings:
        lines.append(f"## {finding.title} ({finding.role}, {finding.count} lines)")
        for e in finding.evidence:
            where = redactor.line(f"{Path(e.file).name}:{e.line}")
            lines.append(f"{where}: {redactor.line(e.text)}")
        lines.append("")
    try:
        out.write_text("\n".join(lines), encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write the excerpt to {out}: {exc.strerror or exc}") from exc
