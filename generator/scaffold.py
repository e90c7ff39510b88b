"""Scaffold a new entry whose every required field the validator then asks for."""

from __future__ import annotations

import datetime as dt
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
