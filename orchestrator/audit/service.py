"""Writing the audit log: one row per state change, added to the caller's transaction.

Every service that changes state calls `record` in the same session as the change, so the
entry commits or rolls back with it: the log never claims a change that did not happen, and
no change escapes the log. Rows are only inserted, never updated or deleted.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlmodel import Session

from orchestrator.audit.models import AuditEntry
from orchestrator.stats.jsontypes import JsonValue

__all__ = ["record"]


def record(
    session: Session,
    *,
    actor: str,
    organisation_id: int | None,
    object_type: str,
    object_id: int,
    action: str,
    from_state: str | None = None,
    to_state: str | None = None,
    reason: str = "",
    data: Mapping[str, JsonValue] | None = None,
) -> AuditEntry:
    """Add an audit entry for a change made in `session`; it commits with that change.

    >>> record(session, actor=principal.actor, organisation_id=org.id,
    ...        object_type="api_token", object_id=token.id, action="revoke")
    """
    entry = AuditEntry(
        actor=actor,
        organisation_id=organisation_id,
        object_type=object_type,
        object_id=object_id,
        action=action,
        from_state=from_state,
        to_state=to_state,
        reason=reason,
        data=dict(data or {}),
    )
    session.add(entry)
    return entry
