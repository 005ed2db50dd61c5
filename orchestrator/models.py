"""Every table model, imported in dependency order: the metadata Alembic compares against."""

from orchestrator.audit.models import AuditEntry
from orchestrator.auth.models import ApiToken, Organisation
from orchestrator.endpoints.models import Endpoint
from orchestrator.frontier.models import FrontierVersion
from orchestrator.review.models import ReviewEntry, WebhookDelivery
from orchestrator.runs.models import Point, Run
from orchestrator.slo.models import SloProfile
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "ApiToken",
    "AuditEntry",
    "Endpoint",
    "FrontierVersion",
    "Organisation",
    "Point",
    "ReviewEntry",
    "Run",
    "SloProfile",
    "Submission",
    "System",
    "WebhookDelivery",
    "Workload",
]
