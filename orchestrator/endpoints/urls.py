"""Which outbound URLs rollbench may measure (DESIGN §11).

http and https only; cloud metadata services are refused always (a benchmark daemon that
fetches any URL it is given would otherwise hand out instance credentials); private and
loopback ranges are allowed or refused by setting. Names are resolved once, here, and every
address they resolve to must pass.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from orchestrator.errors import Invalid

METADATA_HOSTS = {"metadata.google.internal", "metadata", "metadata.azure.com"}
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, ...
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}
LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))


def check_url(url: str, *, allow_private: bool, field: str = "base_url") -> str:
    """Return the normalised URL or raise `Invalid` naming `field` and the reason."""
    if any(c.isspace() or not c.isprintable() for c in url):
        raise Invalid("must not contain spaces or control characters", field=field)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Invalid(f"not a valid URL: {exc}", field=field) from None
    if parts.scheme not in ("http", "https"):
        raise Invalid("must use http:// or https://", field=field)
    host = parts.hostname
    if not host:
        raise Invalid("has no host", field=field)
    if parts.username or parts.password:
        raise Invalid("must not carry credentials; use api_key", field=field)
    if host.lower().rstrip(".") in METADATA_HOSTS:
        raise Invalid(f"{host} is a cloud metadata service", field=field)
    for address in _addresses(host, port or (443 if parts.scheme == "https" else 80), field):
        if address in METADATA_ADDRESSES or any(address in n for n in LINK_LOCAL):
            raise Invalid(
                f"{host} resolves to {address}, a cloud metadata or link-local address", field=field
            )
        if not allow_private and (address.is_private or address.is_loopback):
            raise Invalid(
                f"{host} resolves to the private address {address}; private "
                "endpoints are not allowed on this server",
                field=field,
            )
    return url.rstrip("/")


def _addresses(
    host: str, port: int, field: str
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise Invalid(f"host {host!r} does not resolve: {exc.strerror}", field=field) from None
    except UnicodeError:  # the IDNA encoding of the name failed (a label empty or too long)
        raise Invalid(f"host {host[:120]!r} is not a valid host name", field=field) from None
    out = []
    for info in infos:
        addr = str(info[4][0]).split("%", 1)[0]
        out.append(ipaddress.ip_address(addr))
    return out
