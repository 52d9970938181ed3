"""Session RPCs forwarded between replicas whatever their content encoding (the generated clients gzip).

The Connect clients generated for aophub send requests gzip-compressed by default
(``content-encoding: gzip``). The replica a session RPC arrives at must read such a request to find
the session's owner, and the owner must get it with its encoding; else the call runs on a replica
that does not own the session.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from aophub.rpc.mount import MAX_MESSAGE_BYTES
from aophub.store.postgres_schema import migrate_database
from aophub.v1 import session_connect, session_pb2

from .support.hub_replicas import hub_replicas
from .support.postgres import PostgresCluster
from .support.replicas import external_node
from .support.rpc import BearerKey
from .support.server import TOKEN
from .support.wire import AppSocket

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


async def test_a_gzipped_session_rpc_runs_on_the_sessions_owner(database: str, tmp_path: Path) -> None:
    """UpdateSession with the generated client (gzip) sent to r2 for a session of r1's node renames it
    on r1, the owner: both replicas then show the new title."""
    with hub_replicas(tmp_path, database, 2, "--replica-lease", "2") as (r1, r2):
        async with external_node(r1.http, "enc-n1"), await AppSocket.open(r1.app_url) as app:
            session = await app.open_session("enc-n1", title="before")
            async with session_connect.SessionServiceClient(r2.http, interceptors=[BearerKey(TOKEN)]) as client:
                update = session_pb2.UpdateSessionRequest(request_id="u1", session_id=session.id, title="after")
                answer = await client.update_session(update)
            assert answer.accepted.title == "after", answer
            for hub in (r1, r2):
                async with session_connect.SessionServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client:
                    read = await client.get_session(session_pb2.GetSessionRequest(session_id=session.id))
                assert read.session.title == "after", hub.data_dir.name


async def test_a_session_rpc_over_the_message_limit_is_refused_before_it_is_held(database: str, tmp_path: Path) -> None:
    """A session call's body over the services' message limit sent to a replica is refused
    resource_exhausted, as one hub's services refuse it, without the replica reading all of it (it read
    the whole body to find the session's owner); the replica then serves as before."""
    with hub_replicas(tmp_path, database, 2, "--replica-lease", "2") as (_r1, r2):
        async with httpx.AsyncClient(timeout=60) as client:
            answer = await client.post(
                r2.http + "/aophub.v1.SessionService/UpdateSession",
                content=bytes(MAX_MESSAGE_BYTES + 1),
                headers={"content-type": "application/proto", "authorization": f"Bearer {TOKEN}"},
            )
            assert answer.status_code == 429, answer.text
            assert answer.json()["code"] == "resource_exhausted"
            async with session_connect.SessionServiceClient(r2.http, interceptors=[BearerKey(TOKEN)]) as rpc:
                listed = await rpc.list_sessions(session_pb2.ListSessionsRequest())
            assert isinstance(listed, session_pb2.ListSessionsResponse)
