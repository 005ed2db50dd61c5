"""Checks on what a submission declares, as a whole rather than per point (DESIGN §8).

- `metadata.complete`: the system declares `rules.checks.required_metadata`; the submission
  carries a server configuration (a warning only for imported submissions, whose reference
  client folders have none).
- `accuracy.required`: accuracy runs present and passing where the submission requires them.

The topology a submission declares is checked in `orchestrator.review.topology`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from orchestrator.programme import ProgrammeRules
from orchestrator.review.findings import ERROR, WARNING, Finding
from orchestrator.runs.models import Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionSource
from orchestrator.systems.models import System

__all__ = ["check_accuracy", "check_metadata"]


def check_metadata(
    system: System | None, submission: Submission, rules: ProgrammeRules
) -> list[Finding]:
    if system is None:
        return [Finding("metadata.complete", ERROR, False, "the submission's system is missing.")]
    missing = []
    for name in rules.checks.required_metadata:
        value = getattr(system, name, None)
        if isinstance(value, str):
            ok = bool(value.strip())
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = value > 0
        else:
            ok = value is not None and value != {}
        if not ok:
            missing.append(name)
    out = []
    if missing:
        out.append(
            Finding(
                "metadata.complete",
                ERROR,
                False,
                f"system {system.name!r} does not declare {', '.join(missing)}; the programme "
                f"requires {', '.join(rules.checks.required_metadata)} (counts above 0).",
            )
        )
    else:
        out.append(
            Finding(
                "metadata.complete",
                ERROR,
                True,
                f"system {system.name!r} declares {', '.join(rules.checks.required_metadata)}.",
            )
        )
    imported = submission.source is SubmissionSource.IMPORTED
    if submission.server_config:
        out.append(Finding("metadata.complete", ERROR, True, "the submission has a server_config."))
    else:
        out.append(
            Finding(
                "metadata.complete",
                WARNING if imported else ERROR,
                False,
                "the submission has no server_config: a snapshot of the serving "
                "configuration (runtime flags, parallelism, batch limits) is required so "
                "that the result can be reproduced"
                + (" (imported: the reference client's folder carries none)." if imported else "."),
            )
        )
    return out


def _accuracy_passed(run: Run) -> bool | None:
    summary = run.summary or {}
    verdict = summary.get("passed")
    nested = summary.get("accuracy")
    if verdict is None and isinstance(nested, Mapping):
        verdict = nested.get("passed")
    return verdict if isinstance(verdict, bool) else None


def check_accuracy(submission: Submission, runs: Sequence[Run]) -> Finding:
    accuracy = [r for r in runs if r.kind is RunKind.ACCURACY and r.state is RunState.FINISHED]
    if not submission.accuracy_required:
        return Finding(
            "accuracy.required",
            ERROR,
            True,
            "accuracy is not required for this submission (quality: not measured).",
        )
    if not accuracy:
        return Finding(
            "accuracy.required",
            ERROR,
            False,
            "accuracy required but not measured: the submission has no finished accuracy run.",
        )
    verdicts = {r.level: _accuracy_passed(r) for r in accuracy}
    failed = [f"{level:g}" for level, v in verdicts.items() if v is False]
    unknown = [f"{level:g}" for level, v in verdicts.items() if v is None]
    if failed or unknown:
        parts = []
        if failed:
            parts.append(f"failed the quality threshold at level(s) {', '.join(failed)}")
        if unknown:
            parts.append(f"has no pass/fail verdict at level(s) {', '.join(unknown)}")
        return Finding(
            "accuracy.required",
            ERROR,
            False,
            f"accuracy required: the accuracy run {'; '.join(parts)}.",
        )
    return Finding(
        "accuracy.required",
        ERROR,
        True,
        f"accuracy measured and passed at level(s) {', '.join(f'{v:g}' for v in verdicts)}.",
    )
