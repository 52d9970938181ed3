"""Where a listening hub can be reached: the host it was given, or every interface's address for a wildcard.

``--host 0.0.0.0`` (or ``::``) listens on every interface, but ``http://0.0.0.0:8080`` is not an
address anyone can dial. :func:`reachable_hosts` lists the addresses that are: the interfaces'
IPv4 addresses for ``0.0.0.0``, and their IPv6 and IPv4 addresses for ``::`` (a dual-stack
socket), loopback first, link-local IPv6 left out (it needs a zone to be dialled). On Linux the
addresses come from the kernel (``SIOCGIFADDR``, ``/proc/net/if_inet6``); elsewhere from what
the host name resolves to.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import socket
import struct
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["WILDCARD_HOSTS", "reachable_hosts", "url_host", "websocket_url"]

WILDCARD_HOSTS = ("0.0.0.0", "::", "")
_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address
_IF_INET6 = Path("/proc/net/if_inet6")
_LINK_SCOPE = 0x20


def reachable_hosts(host: str) -> list[str]:
    """The addresses a listener on ``host`` answers at (``host`` itself if not a wildcard).

    Loopback first, IPv4 before IPv6: the first is the one to use on the hub's own machine.
    """
    if host not in WILDCARD_HOSTS:
        return [host]
    found = _ipv4_addresses()
    if host == "::":
        found = _ipv6_addresses() + found
    unique = list(dict.fromkeys(found))
    unique.sort(key=lambda address: (not ipaddress.ip_address(address).is_loopback, ":" in address))
    return unique or ["127.0.0.1"]


def url_host(host: str) -> str:
    """``host`` as it goes in a URL: IPv6 addresses in brackets."""
    return f"[{host}]" if ":" in host else host


def websocket_url(address: str, path: str, query: str = "") -> str:
    """The ``ws://`` (``wss://`` for https) URL of ``path`` at an ``http(s)://HOST[:PORT]`` address.

    ``query`` is appended as it is (already encoded).
    """
    parts = urlsplit(address)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, path, query, ""))


def _ipv4_addresses() -> list[str]:
    if sys.platform != "linux":
        return ["127.0.0.1", *_resolved(socket.AF_INET)]
    addresses = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _index, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            with contextlib.suppress(OSError):  # an interface without an IPv4 address
                answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
                addresses.append(socket.inet_ntoa(answer[20:24]))
    return addresses


def _ipv6_addresses() -> list[str]:
    if sys.platform != "linux":
        return ["::1", *_resolved(socket.AF_INET6)]
    addresses = []
    with contextlib.suppress(OSError):
        for line in _IF_INET6.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 4 and int(fields[3], 16) != _LINK_SCOPE:
                addresses.append(ipaddress.IPv6Address(int(fields[0], 16)).compressed)
    return addresses


def _resolved(family: socket.AddressFamily) -> list[str]:
    with contextlib.suppress(OSError):
        return [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None, family)]
    return []
