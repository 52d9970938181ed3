"""List a hub's sessions, or one session's events, as ProtoJSON: the management API from Python.

    AOPHUB_TOKEN=KEY python examples/python/connectrpc.py --server http://127.0.0.1:8080
    AOPHUB_TOKEN=KEY python examples/python/connectrpc.py --session ID

Prints one ProtoJSON object per line (``aophub.v1.SessionInfo``, or ``aop.EventDelivery`` with
its cursor), paging through ``SessionService.ListSessions`` or ``SessionService.ListEvents``
with the generated Connect clients of ``aophub.v1`` (``Management`` attaches the token). A
plain blocking program: the generated synchronous clients need no event loop. Exits 1 with
the Connect error code (e.g. ``unauthenticated``, ``not_found``) when the hub refuses.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This directory holds connectrpc.py, which would shadow the connectrpc package that the client
# imports: take the directory off the import path before importing it.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import os
from collections.abc import Iterator

from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.message import Message

from aop import chat_pb2
from aophub.client import Management
from aophub.v1 import session_pb2

# Imported for their descriptors: ProtoJSON prints the Any payloads of events (interactions, ...).
from aophub.v1 import extensions_pb2, interaction_pb2, scan_pb2  # noqa: F401  # isort: skip


def sessions(management: Management, include_closed: bool) -> Iterator[Message]:
    request = session_pb2.ListSessionsRequest(include_closed=include_closed, include_archived=include_closed)
    while True:
        page = management.sessions.list_sessions(request)
        yield from page.sessions
        if not page.next_page_token:
            return
        request.page_token = page.next_page_token


def events(management: Management, session_id: str) -> Iterator[Message]:
    request = chat_pb2.ListEventsRequest(session_id=session_id)
    while True:
        page = management.sessions.list_events(request)
        if not page.events:  # a short page is not the end; an empty one is
            return
        yield from page.events
        request.after_cursor = page.next_cursor


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default=os.environ.get("AOPHUB_URL", "http://127.0.0.1:8080"), help="hub URL")
    parser.add_argument("--token", default=os.environ.get("AOPHUB_TOKEN"), help="access key (default $AOPHUB_TOKEN)")
    parser.add_argument("--session", default="", help="print this session's events instead of the sessions")
    parser.add_argument("--all", action="store_true", help="also list closed and archived sessions")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or $AOPHUB_TOKEN) is required")
    with Management(args.server, args.token) as management:
        try:
            found = events(management, args.session) if args.session else sessions(management, args.all)
            for message in found:
                print(json_format.MessageToJson(message, indent=None))
        except ConnectError as error:
            print(f"refused: {error.code.value}: {error.message}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
