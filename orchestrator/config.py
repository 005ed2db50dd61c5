"""One Settings tree for the whole program: the only place that reads the environment.

Variables use the `ROLLBENCH_` prefix and `__` for nesting, e.g.
`ROLLBENCH_LOADGEN__STALL_TIMEOUT_S=30`. Every field carries a description, which doubles as
documentation (`rollbench` will print them in a later `config` command).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class LoadgenSettings(BaseModel):
    connect_timeout_s: float = Field(10.0, gt=0, description="Connect timeout per request")
    stall_timeout_s: float = Field(
        60.0, gt=0, description="A request with no byte for this long fails as `stall`"
    )
    total_timeout_s: float = Field(600.0, gt=0, description="Whole-request timeout")
    drain_timeout_s: float = Field(
        60.0, ge=0, description="How long in-flight requests may finish after issuing stops"
    )
    workers: int | None = Field(
        None, ge=1, description="Client processes per sweep; unset = one per 512 streams"
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ROLLBENCH_", env_nested_delimiter="__", extra="ignore"
    )

    data_dir: Path = Field(
        Path("rollbench-data"), description="Where runs, records and the embedded store live"
    )
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the store. Unset: SQLite (WAL) at DATA_DIR/rollbench.db; "
        "distributed: postgresql+psycopg://user@host/db",
    )
    artifacts_dir: Path | None = Field(
        None, description="Per-request record files of runs. Unset: DATA_DIR/artifacts"
    )
    broker_url: str | None = Field(
        None,
        description="Celery broker. Unset: a SQLite file under DATA_DIR (embedded mode, no "
        "server); distributed: redis://host:6379/0",
    )
    run_lease_s: float = Field(
        30.0,
        gt=0,
        description="A measuring worker renews its lease on a run every second; "
        "a run whose lease ran out (its worker died) is measured again from scratch",
    )
    recovery_interval_s: float = Field(
        15.0, gt=0, description="How often the scheduler looks for stranded submissions"
    )
    allow_private_endpoints: bool = Field(
        True,
        description="Allow endpoints on loopback and private addresses (cloud metadata "
        "addresses are refused always). Turn off on a shared, internet-facing deployment.",
    )
    secret_keys: SecretStr | None = Field(
        None,
        description="Keys that seal endpoint credentials at rest: comma-separated `id:key` "
        "pairs, the first active, older ones kept so their rows still open (a key is a Fernet "
        "key; `rollbench keys generate` prints a pair). Set the same value on every process "
        "of a distributed install. Unset: DATA_DIR/secret-keys.json, made on first use "
        "(mode 0600) and rotated by `rollbench keys rotate`",
    )
    programme_file: Path | None = Field(
        None,
        description="Programme rules (durations, thresholds, update window, webhooks). "
        "Unset: DATA_DIR/programme.yaml if present, else configs/programme.yaml (MLPerf "
        "Endpoints values)",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="Signs outgoing webhooks (HMAC-SHA256 of the body, header "
        "`X-Rollbench-Signature: sha256=<hex>`). Unset: webhooks are sent unsigned",
    )
    loadgen: LoadgenSettings = Field(default_factory=LoadgenSettings)

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'rollbench.db').resolve()}"

    def resolved_broker_url(self) -> str:
        if self.broker_url:
            return self.broker_url
        return f"sqla+sqlite:///{(self.data_dir / 'broker.db').resolve()}"

    def resolved_artifacts_dir(self) -> Path:
        return self.artifacts_dir or self.data_dir / "artifacts"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
