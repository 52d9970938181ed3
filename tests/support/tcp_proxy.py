"""A TCP proxy a test can cut: everything between one hub replica and the database goes through it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["TcpProxy", "tcp_proxy"]


class TcpProxy:
    """Relays connections to ``target_port`` on 127.0.0.1; :meth:`cut` ends them all and refuses new ones."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.cut_off = False
        self.refused = 0  # connections refused while cut
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    def __repr__(self) -> str:
        return f"<TcpProxy :{self.port} -> :{self.target_port} {'cut' if self.cut_off else 'open'}>"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        """End every relayed connection and refuse new ones until :meth:`heal`."""
        self.cut_off = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def heal(self) -> None:
        self.cut_off = False

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            self.refused += 1
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, upstream_writer}
        await asyncio.gather(self._pump(reader, upstream_writer), self._pump(upstream_reader, writer))
        self._writers -= {writer, upstream_writer}

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()


@contextlib.asynccontextmanager
async def tcp_proxy(target_port: int) -> AsyncIterator[TcpProxy]:
    proxy = TcpProxy(target_port)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()
