"""B6 baseline: a bare connectrpc SessionService answering ListSessions and GetSession.

The generated ``SessionServiceASGIApplication`` served directly by uvicorn, its handlers
returning canned responses: the hub's own ListSessions and GetSession answers, recorded by
the benchmark in the same run, so both servers encode the same messages. No store, no auth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aophub.v1 import session_pb2
from aophub.v1.session_connect import SessionService, SessionServiceASGIApplication
from bench.baselines._serve import serve, server_arguments


class CannedSessions(SessionService):
    """A SessionService whose two reads return fixed responses (the other methods: unimplemented)."""

    def __init__(self, listed: session_pb2.ListSessionsResponse, got: session_pb2.GetSessionResponse) -> None:
        self.listed = listed
        self.got = got

    async def list_sessions(self, request: session_pb2.ListSessionsRequest, ctx: Any, /) -> Any:
        return self.listed

    async def get_session(self, request: session_pb2.GetSessionRequest, ctx: Any, /) -> Any:
        return self.got


def main() -> None:
    parser = server_arguments(__doc__ or "")
    parser.add_argument("--responses", type=Path, required=True, help="JSON: hex 'list' and 'get' responses")
    args = parser.parse_args()
    data = json.loads(args.responses.read_text())
    service = CannedSessions(
        session_pb2.ListSessionsResponse.FromString(bytes.fromhex(data["list"])),
        session_pb2.GetSessionResponse.FromString(bytes.fromhex(data["get"])),
    )
    serve(SessionServiceASGIApplication(service), args.port)


if __name__ == "__main__":
    main()
