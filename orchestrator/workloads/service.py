"""Workloads: loaded from configs/workloads/*.yaml into the store, versioned by name.

Loading is idempotent: an unchanged (name, version) is left alone; a changed definition
under an existing version is refused — submissions made with it must stay reproducible —
and the error says to bump the version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml
from pydantic import ValidationError
from sqlmodel import Session, col, select

from orchestrator.errors import Conflict, Invalid, NotFound
from orchestrator.workloads.models import Workload
from orchestrator.workloads.schemas import WorkloadDef

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = PROJECT_ROOT / "configs" / "workloads"


def parse_file(path: Path) -> WorkloadDef:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise Invalid(f"{path}: cannot read: {exc}") from None
    try:
        return WorkloadDef.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Invalid(f"{path}: {where}: {first['msg']}", field=where) from None


def sync_workloads(session: Session, directory: Path = DEFAULT_DIR) -> list[Workload]:
    """Load every *.yaml of `directory`; return the workloads it defines."""
    out = []
    for path in sorted(directory.glob("*.yaml")):
        out.append(upsert(session, parse_file(path)))
    return out


def upsert(session: Session, definition: WorkloadDef) -> Workload:
    doc = definition.model_dump(mode="json")
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    existing = session.exec(
        select(Workload).where(
            Workload.name == definition.name, Workload.version == definition.version
        )
    ).first()
    if existing is not None:
        if existing.sha256 != digest:
            raise Conflict(
                f"workload {definition.name} v{definition.version} changed; give the new "
                "definition a new version",
                field="version",
            )
        return existing
    row = Workload(name=definition.name, version=definition.version, definition=doc, sha256=digest)
    session.add(row)
    session.flush()
    return row


def resolve(session: Session, *, name: str, version: int | None = None) -> Workload:
    query = select(Workload).where(Workload.name == name)
    if version is not None:
        query = query.where(Workload.version == version)
    row = session.exec(query.order_by(col(Workload.version).desc())).first()
    if row is None:
        raise NotFound(
            f"no workload {name}" + (f" v{version}" if version else ""), field="workload"
        )
    return row
