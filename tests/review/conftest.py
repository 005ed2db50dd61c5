"""Fixtures of the review tests: an API with a token per role, and measured submissions built
cheaply as rows (Submission, Run, Point) on a freshly migrated store, SQLite and PostgreSQL.

Engineers of this directory only ADD fixtures here (checks and regions tests share it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from api.app import create_app
from orchestrator import migrate
from orchestrator.auth.models import Role
from orchestrator.auth.service import create_organisation, create_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.dispatch import NullDispatcher
from orchestrator.endpoints.models import ApiFlavour, Endpoint
from orchestrator.programme import DEFAULT_FILE as DEFAULT_PROGRAMME
from orchestrator.programme import ProgrammeRules, _cached, load_programme, programme
from orchestrator.runs.metrics import point_metrics
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionSource, SubmissionState
from orchestrator.systems.models import System
from orchestrator.workloads.service import resolve, sync_workloads

RESULT_SUMMARY = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "mlperf-reference-client"
    / "run_conc16"
    / "performance"
    / "result_summary.json"
)


def reference_metrics(concurrency: int, **overrides: Any) -> dict[str, Any]:
    """A realistic point's figures: the reference client's run at concurrency 16, relabelled."""
    metrics = point_metrics(json.loads(RESULT_SUMMARY.read_text()), concurrency)
    metrics.update(overrides)
    return metrics


@dataclass
class ReviewTokens:
    alice: str  # submitter, org "acme"
    bob: str  # submitter, org "globex"
    operator: str  # operator, org "mlc"
    viewer: str  # viewer, org "public"


@dataclass
class Built:
    """A submission made of rows, and its points' ids in level order."""

    submission_id: int
    system_id: int
    workload_id: int
    point_ids: list[int] = field(default_factory=list)


class Builder:
    """Makes systems and measured submissions directly in the store (no worker, no sweep)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._serial = 0

    def system(self, organisation: str = "acme", **fields: Any) -> int:
        self._serial += 1
        with session_scope(self.engine) as session:
            org = create_organisation(session, name=organisation)
            assert org.id is not None
            values: dict[str, Any] = {
                "name": f"system-{self._serial}",
                "accelerator_model": "H100",
                "accelerator_count": 8,
                "runtime": "vllm",
                "runtime_version": "0.9.0",
                "model": "llama-3.1-8b",
                "max_concurrency": 64,
            }
            values.update(fields)
            system = System(organisation_id=org.id, **values)
            session.add(system)
            session.flush()
            assert system.id is not None
            return system.id

    def submission(
        self,
        *,
        system_id: int,
        levels: Sequence[int] = (1, 2, 4),
        state: SubmissionState = SubmissionState.IN_REVIEW,
        findings: Sequence[dict[str, Any]] = (),
        workload: str = "chat-smoke",
        metrics: dict[int, dict[str, Any]] | None = None,
    ) -> Built:
        """A submission of `system_id` with one finished run and one candidate point per level."""
        with session_scope(self.engine) as session:
            sync_workloads(session)
            wl = resolve(session, name=workload)
            system = session.get(System, system_id)
            assert system is not None and wl.id is not None
            endpoint = Endpoint(
                organisation_id=system.organisation_id,
                system_id=system_id,
                base_url="http://127.0.0.1:9",
                api=ApiFlavour.OPENAI_CHAT,
                served_model="sim-model",
            )
            session.add(endpoint)
            session.flush()
            sub = Submission(
                organisation_id=system.organisation_id,
                system_id=system_id,
                endpoint_id=endpoint.id,
                workload_id=wl.id,
                state=state,
                levels=[float(level) for level in levels],
                requests=48,
                findings=list(findings),
            )
            session.add(sub)
            session.flush()
            assert sub.id is not None
            built = Built(submission_id=sub.id, system_id=system_id, workload_id=wl.id)
            for position, level in enumerate(levels):
                run = Run(
                    submission_id=sub.id,
                    run_key=f"{sub.id}:{RunKind.PERFORMANCE}:{position}:{level}",
                    kind=RunKind.PERFORMANCE,
                    position=position,
                    level=float(level),
                    state=RunState.FINISHED,
                )
                session.add(run)
                session.flush()
                assert run.id is not None
                figures = (metrics or {}).get(level) or reference_metrics(level)
                point = Point(
                    submission_id=sub.id,
                    run_id=run.id,
                    system_id=system_id,
                    workload_id=wl.id,
                    concurrency=level,
                    metrics=figures,
                )
                session.add(point)
                session.flush()
                assert point.id is not None
                built.point_ids.append(point.id)
            return built


@pytest.fixture
def review_engine(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """A migrated store (SQLite and PostgreSQL) under a fresh data dir and default programme."""
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ROLLBENCH_PROGRAMME_FILE", raising=False)
    monkeypatch.delenv("ROLLBENCH_WEBHOOK_SECRET", raising=False)
    get_settings.cache_clear()
    _cached.cache_clear()
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    yield engine
    engine.dispose()
    get_settings.cache_clear()
    _cached.cache_clear()


@pytest.fixture
def build(review_engine: Engine) -> Builder:
    return Builder(review_engine)


@pytest.fixture
def review_api(review_engine: Engine) -> Iterator[tuple[TestClient, ReviewTokens]]:
    """The API on `review_engine`, with one token per role (as tests/api/conftest.py)."""
    with Session(review_engine) as session:
        tokens = ReviewTokens(
            alice=create_token(session, organisation="acme", role=Role.SUBMITTER)[1],
            bob=create_token(session, organisation="globex", role=Role.SUBMITTER)[1],
            operator=create_token(session, organisation="mlc", role=Role.OPERATOR)[1],
            viewer=create_token(session, organisation="public", role=Role.VIEWER)[1],
        )
        session.commit()
    app = create_app(review_engine, NullDispatcher())
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, tokens


@pytest.fixture
def reference_figures() -> Callable[..., dict[str, Any]]:
    """`reference_figures(concurrency, **overrides)`: realistic metrics of a point."""
    return reference_metrics


@pytest.fixture
def use_programme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., ProgrammeRules]:
    """`use_programme(update_window_days=0, webhooks=[...])`: the MLPerf programme with these
    top-level fields replaced becomes this process's programme (a file, as in production)."""
    serial = iter(range(1_000_000))

    def apply(**overrides: Any) -> ProgrammeRules:
        doc = yaml.safe_load(DEFAULT_PROGRAMME.read_text())
        doc.update(overrides)
        path = tmp_path / f"programme-{next(serial)}.yaml"
        path.write_text(yaml.safe_dump(doc))
        monkeypatch.setenv("ROLLBENCH_PROGRAMME_FILE", str(path))
        get_settings.cache_clear()
        _cached.cache_clear()
        return programme()

    return apply


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 answering `status`; what it got is in `received`."""

    url: str
    status: int = 200
    received: list[Received] = field(default_factory=list)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP server in a thread (http.server), recording every POST."""
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            state.received.append(Received(self.path, dict(self.headers.items()), body))
            self.send_response(state.status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/rollbench"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# ------------------------------------------------------------ the checker's crafted rows
# (tests/review/test_checks.py): consistent figures per level, and submissions whose every
# part — system, server_config, endpoint, run metadata on disk, accuracy runs, point state —
# a test can break one at a time.

DEMO_PROGRAMME = DEFAULT_PROGRAMME.parent / "programme-demo.yaml"


def consistent_summary(
    concurrency: int,
    *,
    latency_s: float | None = None,
    duration_s: float = 30.0,
    failed: int = 0,
    tokens_per_request: int = 64,
    tpot_p90_ms: float = 12.5,
    delivered_ratio: float = 1.0,
    read_delay_p99_ms: float = 0.5,
) -> dict[str, Any]:
    """A `result_summary.json` of a closed-loop level that obeys every law the checker knows:
    QPS = completed / duration, mean latency × QPS = concurrency less the drain tail (the
    duration ends at the last completion, half a latency on average after the loop's slots
    stop being refilled; up to rounding of the count), TPS = tokens / duration. Latency grows
    with concurrency, like a real server."""
    latency = latency_s if latency_s is not None else 1.0 + 0.01 * concurrency
    share = 1.0 - min(0.5, latency / (2.0 * duration_s))
    completed = max(1, round(concurrency * share / latency * duration_s))
    ns = 1e9

    def dist(avg_ns: float, p90_ns: float | None = None) -> dict[str, Any]:
        p90 = p90_ns if p90_ns is not None else avg_ns * 1.1
        return {
            "min": avg_ns * 0.5,
            "avg": avg_ns,
            "max": avg_ns * 2.0,
            "percentiles": {"50.0": avg_ns, "90.0": p90, "99.0": p90 * 1.2, "99.9": p90 * 1.3},
        }

    return {
        "n_samples_issued": completed,
        "n_samples_completed": completed,
        "n_samples_failed": failed,
        "duration_ns": duration_s * ns,
        "ttft": dist(0.05 * ns),
        "tpot": dist(tpot_p90_ms / 1.1 * 1e6, tpot_p90_ms * 1e6),
        "latency": dist(latency * ns),
        "output_sequence_lengths": {"total": (completed - failed) * tokens_per_request},
        "input_sequence_lengths": {"total": completed * 128},
        "run_config": {
            "load_pattern": {"type": "concurrency", "target_concurrency": concurrency},
        },
        "rollbench": {
            "delivered_concurrency": concurrency * share * delivered_ratio,
            "read_delay_ns": {"percentiles": {"99.0": read_delay_p99_ms * 1e6}},
            "failure_counts": {"http_5xx": failed},
        },
    }


def consistent_metrics(concurrency: int, **knobs: Any) -> dict[str, Any]:
    """A measured point's `metrics` (through the real `point_metrics`), valid harness."""
    metrics = point_metrics(consistent_summary(concurrency, **knobs), concurrency)
    metrics.update(valid=True, invalid_reasons=[])
    return metrics


class Craft:
    """Builds a complete measured submission as rows, every part overridable.

    `submission(...)` writes a system (unless `system_id` is given), an endpoint, the
    submission, one finished performance run per level whose `result_summary.json` is on
    disk (so the checker can read the run metadata), a point per level, and accuracy runs.
    """

    def __init__(self, engine: Engine, directory: Path) -> None:
        self.engine = engine
        self.directory = directory
        self._serial = 0

    def system(self, **fields: Any) -> int:
        self._serial += 1
        values: dict[str, Any] = {
            "name": f"crafted-{self._serial}",
            "accelerator_model": "H100-SXM-80GB",
            "accelerator_count": 8,
            "nodes": 1,
            "runtime": "vllm",
            "runtime_version": "0.9.2",
            "model": "llama-3.1-8b",
            "topology": {"tensor_parallel": 8, "pipeline_parallel": 1},
            "max_concurrency": 64,
        }
        values.update(fields)
        with session_scope(self.engine) as session:
            org = create_organisation(session, name="acme")
            system = System(organisation_id=org.id, **values)
            session.add(system)
            session.flush()
            assert system.id is not None
            return system.id

    def submission(
        self,
        *,
        system_id: int | None = None,
        levels: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
        metrics: dict[int, dict[str, Any]] | None = None,
        server_config: dict[str, Any] | None = None,
        served_model: str = "sim-model",
        run_config: dict[str, Any] | None = None,
        requested_model: str | None = None,
        accuracy_required: bool = False,
        accuracy: Sequence[tuple[int, bool | None]] = (),
        source: SubmissionSource = SubmissionSource.MEASURED,
        point_state: PointState = PointState.CANDIDATE,
        with_points: bool = True,
    ) -> int:
        """The submission's id. `metrics[level]` replaces a level's figures; `run_config`
        and `requested_model` go into every run's result_summary.json on disk."""
        system_id = system_id if system_id is not None else self.system()
        config = (
            server_config
            if server_config is not None
            else {
                "model": "llama-3.1-8b",
                "served_model_name": served_model,
                "tensor_parallel_size": 8,
                "max_num_seqs": 256,
            }
        )
        with session_scope(self.engine) as session:
            sync_workloads(session)
            wl = resolve(session, name="chat-smoke")
            system = session.get(System, system_id)
            assert system is not None and wl.id is not None
            endpoint = Endpoint(
                organisation_id=system.organisation_id,
                system_id=system_id,
                base_url="http://127.0.0.1:9/v1",
                api=ApiFlavour.OPENAI_CHAT,
                served_model=served_model,
            )
            session.add(endpoint)
            session.flush()
            imported = source is SubmissionSource.IMPORTED
            sub = Submission(
                organisation_id=system.organisation_id,
                system_id=system_id,
                endpoint_id=None if imported else endpoint.id,
                workload_id=wl.id,
                state=SubmissionState.MEASURED,
                levels=[float(level) for level in levels],
                requests=48,
                accuracy_required=accuracy_required,
                server_config=config,
                source=source,
            )
            session.add(sub)
            session.flush()
            assert sub.id is not None
            for position, level in enumerate(levels):
                doc = consistent_summary(level)
                doc["run_config"] = run_config if run_config is not None else doc["run_config"]
                doc["rollbench"]["spec"] = {"endpoint": {"model": requested_model or served_model}}
                folder = self.directory / f"sub-{sub.id}" / f"concurrency-{level}" / "performance"
                folder.mkdir(parents=True)
                (folder / "result_summary.json").write_text(json.dumps(doc))
                run = Run(
                    submission_id=sub.id,
                    run_key=f"{sub.id}:performance:{position}",
                    kind=RunKind.PERFORMANCE,
                    position=position,
                    level=float(level),
                    state=RunState.FINISHED,
                    summary={"result_summary_path": str(folder / "result_summary.json")},
                )
                session.add(run)
                session.flush()
                assert run.id is not None
                if with_points:
                    figures = (metrics or {}).get(level) or consistent_metrics(level)
                    session.add(
                        Point(
                            submission_id=sub.id,
                            run_id=run.id,
                            system_id=system_id,
                            workload_id=wl.id,
                            concurrency=level,
                            state=point_state,
                            metrics=figures,
                        )
                    )
            for offset, (level, passed) in enumerate(accuracy):
                position = len(levels) + offset
                session.add(
                    Run(
                        submission_id=sub.id,
                        run_key=f"{sub.id}:accuracy:{position}",
                        kind=RunKind.ACCURACY,
                        position=position,
                        level=float(level),
                        state=RunState.FINISHED,
                        summary={"passed": passed, "score": 0.81, "threshold": 0.823},
                    )
                )
            return sub.id


@pytest.fixture
def craft(review_engine: Engine, tmp_path: Path) -> Craft:
    return Craft(review_engine, tmp_path / "crafted")


@pytest.fixture
def demo_rules() -> ProgrammeRules:
    """The demo programme, loaded from configs/programme-demo.yaml as `rollbench up --demo`."""
    return load_programme(DEMO_PROGRAMME)


@pytest.fixture
def good_metrics() -> Callable[..., dict[str, Any]]:
    """`good_metrics(concurrency, **knobs)`: a point's figures that obey every check (the
    knobs of `consistent_summary` break one figure at a time)."""
    return consistent_metrics
