"""Load the real-log corpus (tests/corpus/real/), each case checked against the format in its README."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, HttpUrl

CORPUS = Path(__file__).parent / "corpus" / "real"
FAMILIES = {
    "nccl",
    "pytorch-distributed",
    "ddp",
    "fsdp",
    "deepspeed",
    "megatron",
    "cuda",
    "xid",
    "host",
    "dataloader",
    "numerics",
    "torch-compile",
    "checkpoint",
    "autograd",
    "huggingface",
    "vllm",
    "negative",
}


class CaseFile(BaseModel):
    """case.yaml."""

    model_config = ConfigDict(extra="forbid")

    source: HttpUrl
    summary: str
    family: str
    kind: Literal["failure", "negative"]
    expected: list[str] = Field(default_factory=list)
    initiating: dict[Literal["rank", "host"], int | str] | None = None
    multi_rank: bool = False
    uncovered: str | None = None
    exception: str | None = None
    settled_by: str
    held_out: bool = False


class Case(CaseFile):
    """A case with its folder and logs."""

    name: str
    logs: list[Path]


def load_cases(root: Path = CORPUS) -> list[Case]:
    """Every case under root, sorted by family and name."""
    cases = []
    for meta in sorted(root.glob("*/*/case.yaml")):
        folder = meta.parent
        data = yaml.safe_load(meta.read_text(encoding="utf-8"))
        logs = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "case.yaml")
        cases.append(Case(**data, name=f"{folder.parent.name}/{folder.name}", logs=logs))
    return cases
