"""A minimal keep-alive HTTP/1.1 client for Connect unary calls (binary protobuf).

General-purpose clients cost the load generator more per request than a Python server spends
answering a small Connect call, which would make a bare baseline look no faster than the hub.
This one writes a fixed request and reads one response (Content-Length or chunked) per call.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from bench.processes import TOKEN

__all__ = ["ConnectCall", "HttpConnection", "Response"]


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class ConnectCall:
    """A Connect unary POST of a serialized request message, with the bench's bearer key."""

    path: str
    body: bytes

    def encode(self, host: str) -> bytes:
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/proto\r\n"
            f"Connect-Protocol-Version: 1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {len(self.body)}\r\n\r\n"
        )
        return head.encode() + self.body


class HttpConnection:
    """One keep-alive connection; one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self._reader = reader
        self._writer = writer
        self.host = host

    @classmethod
    async def open(cls, port: int) -> HttpConnection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, f"127.0.0.1:{port}")

    async def send(self, request: bytes) -> Response:
        """Write an encoded request and read its response."""
        self._writer.write(request)
        status_line = await self._reader.readuntil(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        headers: dict[str, str] = {}
        while (line := await self._reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await self._reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await self._read_chunks()
        else:
            body = b""
        return Response(status, headers, body)

    async def call(self, call: ConnectCall) -> Response:
        return await self.send(call.encode(self.host))

    async def _read_chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await self._reader.readuntil(b"\r\n") != b"\r\n":
                    pass
                return b"".join(parts)
            parts.append(await self._reader.readexactly(size))
            await self._reader.readexactly(2)

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()
