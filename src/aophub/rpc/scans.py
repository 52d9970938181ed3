"""ScanService and the ``aophub.v1.ScanProtocolMessage`` namespace (thin: validate, call Scans, map).

Read methods raise :class:`HubError` (the error interceptor maps it to a
Connect code); SubmitScan and CancelScan answer refusals as ``rejected``
outcomes, journaled by ``request_id``.

A watch (``watch_scan_request``) answers with a ``ScanSnapshot``, then
streams ``ScanEvent`` messages for the events of the scan's session (persisted
ones carry ``Envelope.delivery_cursor``: replay after ``after_cursor``, then
live, each exactly once) and ``ScanUpdate`` messages when the scan's status or
progress changes, all with ``reply_to`` = the request's envelope id. A queued
scan has no session yet: its events start when it starts running. The watch
ends on ``aop.CancelOperation`` or disconnect.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.protobuf.message import Message

from aophub.hub.application import ApplicationConnection
from aophub.hub.event_log import Delivery
from aophub.hub.request_checks import parse_cursor
from aophub.hub.scans import Scans, delivered_event, position
from aophub.hub.watch import follow
from aophub.protocol.codec import encode_envelope
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.rpc.paging import decode_token, encode_token, page_size
from aophub.v1 import scan_pb2

__all__ = ["ScanServiceImpl", "ScanWatches"]

Ctx = Any


class ScanServiceImpl:
    """aophub.v1.ScanService over the hub's :class:`Scans`."""

    def __init__(self, scans: Scans) -> None:
        self.scans = scans

    def __repr__(self) -> str:
        return "<ScanServiceImpl>"

    async def submit_scan(self, request: scan_pb2.SubmitScanRequest, ctx: Ctx) -> scan_pb2.SubmitScanResponse:
        return await self.scans.submit(request, caller())

    async def get_scan(self, request: scan_pb2.GetScanRequest, ctx: Ctx) -> scan_pb2.GetScanResponse:
        return scan_pb2.GetScanResponse(scan=await self.scans.require(request.scan_id, caller()))

    async def list_scans(self, request: scan_pb2.ListScansRequest, ctx: Ctx) -> scan_pb2.ListScansResponse:
        size = page_size(request.page_size)
        before = decode_token(request.page_token)
        scans = await self.scans.list(limit=size + 1, before=before, statuses=list(request.statuses), caller=caller())
        response = scan_pb2.ListScansResponse(scans=scans[:size])
        if len(scans) > size:
            response.next_page_token = encode_token(position(scans[size - 1]))
        return response

    async def cancel_scan(self, request: scan_pb2.CancelScanRequest, ctx: Ctx) -> scan_pb2.CancelScanResponse:
        return await self.scans.cancel(request, caller())

    async def get_scan_report(self, request: scan_pb2.GetScanReportRequest, ctx: Ctx) -> scan_pb2.GetScanReportResponse:
        return await self.scans.report(request.scan_id, caller())


def _frame(reply_to: str, cursor: str = "", **message: Message) -> bytes:
    return encode_envelope(scan_pb2.ScanProtocolMessage(**message), reply_to=reply_to, cursor=cursor)  # type: ignore[arg-type]


class ScanWatches:
    """The namespace handler for ``aophub.v1.ScanProtocolMessage`` on the application channel."""

    def __init__(self, scans: Scans) -> None:
        self.scans = scans

    def __repr__(self) -> str:
        return "<ScanWatches>"

    async def __call__(
        self, connection: ApplicationConnection, envelope_id: str, message: Message
    ) -> scan_pb2.ScanProtocolMessage | None:
        """Start a watch, or answer ``rejected`` (NOT_FOUND, INVALID_ARGUMENT)."""
        assert isinstance(message, scan_pb2.ScanProtocolMessage)
        if message.WhichOneof("message") != "watch_scan_request":
            raise HubError(Code.UNSUPPORTED_MESSAGE, "applications send watch_scan_request in this namespace")
        request = message.watch_scan_request
        scans = self.scans
        try:
            cursor = parse_cursor(request.after_cursor)
            await scans.require(request.scan_id, connection.principal)
        except HubError as error:
            return scan_pb2.ScanProtocolMessage(rejected=to_rejection(error))
        connection.start_operation(
            envelope_id, lambda: self._watch(connection, scans, envelope_id, request.scan_id, cursor)
        )
        return None

    async def _watch(
        self, connection: ApplicationConnection, scans: Scans, watch_id: str, scan_id: str, cursor: int
    ) -> None:
        feed = scans.subscribe(scan_id)  # before the snapshot, so no change falls in between
        events: asyncio.Task[None] | None = None
        waiter: asyncio.Task[scan_pb2.Scan] | None = None
        try:
            scan = await scans.require(scan_id, connection.principal)
            await connection.send_frame(_frame(watch_id, snapshot=scan_pb2.ScanSnapshot(scan=scan)))
            sent = scan
            while True:
                if events is None and scan.session_id:
                    events = asyncio.ensure_future(self._events(connection, watch_id, scan, cursor))
                waiter = asyncio.ensure_future(feed.next())
                running: list[asyncio.Future[Any]] = [waiter] if events is None else [waiter, events]
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                if events is not None and events.done():
                    events.result()  # re-raises why the event stream stopped
                    return
                scan = waiter.result()
                if scan != sent:
                    await connection.send_frame(_frame(watch_id, update=scan_pb2.ScanUpdate(scan=scan)))
                    sent = scan
        finally:
            scans.unsubscribe(feed)
            pending = [task for task in (events, waiter) if task is not None and not task.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _events(self, connection: ApplicationConnection, watch_id: str, scan: scan_pb2.Scan, cursor: int) -> None:
        session = await connection.hub.require_session(scan.session_id)

        async def deliver(delivery: Delivery) -> None:
            event = scan_pb2.ScanEvent(scan_id=scan.id, event=delivered_event(delivery))
            cursor_text = str(delivery.cursor) if delivery.cursor else ""
            await connection.send_frame(_frame(watch_id, cursor_text, event=event))

        await follow(session.log, connection.hub.store, cursor, deliver)
