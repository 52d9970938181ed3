"""A TCP proxy in front of a hub whose connections a test can cut, as a network failure would.

``async with cut_proxy(port) as proxy:`` listens on 127.0.0.1 (``proxy.port``) and forwards
every connection to ``port``; :meth:`CutProxy.cut` aborts every connection open through it
(both sides, no close handshake). New connections are forwarded as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["CutProxy", "cut_proxy"]


class CutProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections = 0
        self._open: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()
        self._connected = asyncio.Condition()

    def __repr__(self) -> str:
        return f"<CutProxy :{self.port} -> :{self.target_port} open={len(self._open) // 2}>"

    def cut(self) -> int:
        """Abort every open connection; how many sockets were cut."""
        writers, self._open = self._open, set()
        for writer in writers:
            writer.transport.abort()
        return len(writers)

    async def wait_for_connections(self, count: int, timeout: float = 20.0) -> None:
        """Wait until ``count`` connections were made through the proxy in all."""
        async with self._connected:
            await asyncio.wait_for(self._connected.wait_for(lambda: self.connections >= count), timeout)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.transport.abort()
            return
        self._open |= {client_writer, upstream_writer}
        async with self._connected:
            self.connections += 1
            self._connected.notify_all()
        for source, sink in ((client_reader, upstream_writer), (upstream_reader, client_writer)):
            pump = asyncio.create_task(self._pump(source, sink))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        self._open.discard(sink)
        sink.transport.abort()

    async def close(self) -> None:
        self.cut()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)


@contextlib.asynccontextmanager
async def cut_proxy(target_port: int) -> AsyncIterator[CutProxy]:
    proxy = CutProxy(target_port)
    server = await asyncio.start_server(proxy._accept, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        await proxy.close()
        await server.wait_closed()
