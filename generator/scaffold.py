"""Scaffold a new entry whose every required field the validator then asks for."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from generator.errors import TrainwreckError
from generator.schema import is_kebab
from generator.taxonomy import SYSTEMS
from generator.validate import did_you_mean

TEMPLATE = """\
# yaml-language-server: $schema=../../schema/entry.schema.json
# A new entry. `trainwreck validate` names every field still empty; `trainwreck schema` documents them all.
id: {id}
title: ""            # the failure, named the way a reader would search for it
summary: ""          # two or three plain sentences: what happens and what it is not
category: ""         # communication, configuration, data, hardware, memory, numerics, performance, software
severity: ""         # low, medium, high, critical
layer: ""            # hardware, software, configuration, mixed
phase: ""            # training, inference, both
systems:
  - id: {system}
tags: []             # ids declared in tags.yaml
signatures: []       # each: literal or regex, source, examples (real log lines it must match)
fingerprint: []      # for failures that print nothing: metric, shape, window
observations: []
symptoms: []         # each: symptom, cause
mechanism: ""
misread_as: []       # each: diagnosis, why_wrong, tell_apart
root_causes: []
confirm: []          # cheapest check first; each: step, command, outcome
fix:
  summary: ""
  steps: []
  code: []           # each: stack, language, code, why
verify:
  step: ""
  expected: ""
prevention: []
scale:
  single_gpu: ""
  large_scale: ""
collateral:
  usually: false
  note: ""
related: []
references: []       # each: title, url
added: {today}
updated: {today}
"""


def scaffold_entry(root: Path, entry_id: str, system: str) -> Path:
    """Write entries/<system>/<id>.yaml and return its path; never overwrite a file."""
    if not is_kebab(entry_id):
        raise TrainwreckError(f"id {entry_id!r} must be kebab-case: lowercase letters, digits and '-'")
    if system not in SYSTEMS:
        hint = did_you_mean(system, SYSTEMS)
        raise TrainwreckError(f"unknown system {system!r}" + (f"; {hint}" if hint else ""))
    existing = sorted((root / "entries").rglob(f"{entry_id}.yaml"))
    if existing:
        raise TrainwreckError(f"an entry with id {entry_id!r} already exists: {existing[0].relative_to(root)}")
    path = root / "entries" / system / f"{entry_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEMPLATE.format(id=entry_id, system=system, today=dt.date.today().isoformat()), encoding="utf-8")
    return path.relative_to(root)


def scaffold_from_log(root: Path, where: str, entry_id: str | None, system: str | None) -> Path:
    """Scaffold an entry whose signature and example come from one log line ('LOG:LINE')."""
    from generator.diagnose.attribute import payload
    from generator.diagnose.judge import package_of_type

    log, _, number = where.rpartition(":")
    if not log or not number.isdigit() or int(number) < 1:
        raise TrainwreckError(f"--from-log takes LOG:LINE, e.g. train.log:42; got {where!r}")
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            line = next((text for n, text in enumerate(f, start=1) if n == int(number)), None)
    except OSError as exc:
        raise TrainwreckError(f"cannot read {log}: {exc.strerror}") from exc
    if line is None or not line.strip():
        raise TrainwreckError(f"{log} has no text on line {number}")
    example = line.rstrip("\r\n")
    text = payload(example).strip()
    exception, _, message = text.partition(": ")
    package = package_of_type(exception)
    system = system or (package if package in SYSTEMS else "pytorch")
    entry_id = entry_id or _id_from(text)
    path = scaffold_entry(root, entry_id, system)
    full = root / path
    # The message up to its first interpolated value is the part upstream prints verbatim.
    core = re.split(r"\d|'|\"|/", text, maxsplit=1)[0].rstrip(" :(,[") or text
    body = full.read_text(encoding="utf-8")
    body = body.replace(
        "signatures: []       # each: literal or regex, source, examples (real log lines it must match)",
        "signatures:          # check the wording against the upstream source that prints it\n"
        f"  - literal: {_yaml_string(core)}\n"
        '    source: ""       # owner/repo:path of the code that prints it\n'
        "    examples:\n"
        f"      - {_yaml_string(example)}",
    )
    body = body.replace('title: ""', f"title: {_yaml_string(exception + (': ' + message[:60] if message else ''))}", 1)
    full.write_text(body, encoding="utf-8")
    return path


def _id_from(text: str) -> str:
    words = re.findall(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])", text)[:6]
    slug = "-".join(w.lower() for w in words) or "new-failure"
    return slug[:60].strip("-")


def _yaml_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
