"""The transport interface between load patterns and HTTP implementations.

A transport sends one prepared request and drives an `Exchange` with the bytes that come
back, stamping each read with `time.monotonic_ns()` as the read returns. It owns the
connection pool, the connect/stall/total timeouts and their enforcement, and it never
retries: a measured request that fails is a classified failure.

Two implementations exist and the benchmark in `bench/` chooses between them: `native`
(asyncio.Protocol + httptools, the default) and `aiohttp`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from orchestrator.loadgen.exchange import Exchange


@dataclass(frozen=True, slots=True)
class Target:
    """Where requests go: scheme, host, port and the path of the API route."""

    scheme: str
    host: str
    port: int
    path: str  # e.g. /v1/chat/completions
    verify_tls: bool = True

    @classmethod
    def from_url(cls, base_url: str, route: str, verify_tls: bool = True) -> Target:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"URL scheme must be http or https, got {parts.scheme!r}")
        if not parts.hostname:
            raise ValueError(f"URL has no host: {base_url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        path = parts.path.rstrip("/") + "/" + route.lstrip("/")
        return cls(parts.scheme, parts.hostname, port, path, verify_tls)

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host_header}{self.path}"

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.scheme != "https":
            return None
        ctx = ssl.create_default_context()
        if not self.verify_tls:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


@dataclass(slots=True)
class PreparedRequest:
    """A request body plus headers, serialized once per dataset sample and reused."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # the full HTTP/1.1 request, built by the native transport


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect_s: float = 10.0
    stall_s: float = 60.0  # no byte for this long fails the request as `stall`
    total_s: float = 600.0


class Transport(Protocol):
    async def warm(self, connections: int) -> int:
        """Open up to `connections` idle connections, paced; return how many are open."""
        ...

    def start(self, request: PreparedRequest, exchange: Exchange) -> None:
        """Send now (or as soon as a connection is open); `exchange.on_done` says when done."""
        ...

    def abort_in_flight(self, detail: str) -> int:
        """Fail every unfinished exchange as timeout (drain deadline); return how many."""
        ...

    async def close(self) -> None: ...
