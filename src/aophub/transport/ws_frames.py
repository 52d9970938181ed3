"""WebSocket binary frames as a server sends them (RFC 6455 section 5.2): header bytes, no I/O.

A server's frames are never masked, so a complete unfragmented binary message is two bytes of
header (FIN and opcode 2, then the payload length) followed by the payload, with the length
extended to 2 or 8 bytes above 125 and 65,535 bytes. The hub's WebSocket protocol writes such
frames itself for connections without extensions (``transport.server``): building them this way
costs a fraction of the websockets library's general ``Frame.serialize``, which handles masking,
extensions and every opcode. Connections with permessage-deflate take the library's path.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["binary_frame_header", "binary_frames"]

_FIN_BINARY = 0x82


def binary_frame_header(length: int) -> bytes:
    """The header of an unmasked, final binary frame carrying ``length`` bytes."""
    if length < 126:
        return bytes((_FIN_BINARY, length))
    if length < 0x10000:
        return bytes((_FIN_BINARY, 126)) + length.to_bytes(2, "big")
    if length < 1 << 63:
        return bytes((_FIN_BINARY, 127)) + length.to_bytes(8, "big")
    raise ValueError(f"a WebSocket frame carries less than 2**63 bytes, not {length}")


def binary_frames(payloads: Iterable[bytes], out: list[bytes]) -> list[bytes]:
    """Append each payload's frame (header, then payload) to ``out``; returns ``out``, ready for ``b"".join``."""
    for payload in payloads:
        out.append(binary_frame_header(len(payload)))
        out.append(payload)
    return out
