"""Shared state across replicas: two or three ``aophub serve`` processes on one PostgreSQL database.

The journal answers a retried envelope id on any replica with the stored reply; tokens created or
revoked on one replica work or stop on the others; a configuration change reaches every replica;
scans are scheduled by one leader and another replica takes over when it is killed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from aop import chat_pb2, protocol_pb2
from aophub.cluster.logouts import logout_payload, parse_logout
from aophub.config import ConfigStore, default_config
from aophub.store.postgres_schema import migrate_database
from aophub.v1 import (
    config_connect,
    config_pb2,
    scan_pb2,
    session_connect,
    session_pb2,
    token_connect,
    token_pb2,
)
from aophub.v1.scan_connect import ScanServiceClient

from .support.hub_replicas import database_name, hub_replicas
from .support.postgres import PostgresCluster
from .support.rpc import BearerKey
from .support.server import TOKEN
from .support.wire import AppSocket, kinds, stored, text_input

TIMEOUT = 60
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


async def test_a_retried_envelope_on_another_replica_gets_the_stored_reply(database: str, tmp_path: Path) -> None:
    """OpenSession and RunTurn sent to A, then the same envelopes (same ids, same bodies) to B: B replays A's
    replies, and the store holds one session and one turn."""
    with hub_replicas(tmp_path, database, 2, "--echo-delay", "0") as (a, b):
        async with await AppSocket.open(a.app_url) as app_a, await AppSocket.open(b.app_url) as app_b:
            open_request = protocol_pb2.ProtocolMessage(
                open_session_request=chat_pb2.OpenSessionRequest(node_id="local")
            )
            first = await app_a.reply(await app_a.send(open_request, "open-1"))
            again = await app_b.reply(await app_b.send(open_request, "open-1"))
            assert first.open_session_response.WhichOneof("outcome") == "accepted"
            assert again == first
            session_id = first.open_session_response.accepted.id
            watch = await app_a.watch(session_id)
            run_request = protocol_pb2.ProtocolMessage(
                run_turn_request=chat_pb2.RunTurnRequest(session_id=session_id, input=text_input("once"))
            )
            ran = await app_a.reply(await app_a.send(run_request, "run-1"))
            assert ran.run_turn_response.WhichOneof("outcome") == "accepted"
            await app_a.turn_ended(watch, ran.run_turn_response.accepted.turn_id, TIMEOUT)
            rerun = await app_b.reply(await app_b.send(run_request, "run-1"))
            assert rerun == ran
            different = protocol_pb2.ProtocolMessage(
                run_turn_request=chat_pb2.RunTurnRequest(session_id=session_id, input=text_input("other"))
            )
            conflict = await app_b.reply(await app_b.send(different, "run-1"))
            assert conflict.run_turn_response.rejected.code == "ALREADY_EXISTS"
            events = await stored(app_b, session_id)
            assert kinds(events).count("turn_started") == 1
            assert kinds(events).count("turn_ended") == 1


async def test_concurrent_duplicates_on_two_replicas_make_one_operation(database: str, tmp_path: Path) -> None:
    """The same OpenSession envelope sent to A and B at the same moment (a client retrying on another
    replica while the first attempt runs): both get the same reply and one session exists per id."""
    with hub_replicas(tmp_path, database, 2) as (a, b):
        async with await AppSocket.open(a.app_url) as app_a, await AppSocket.open(b.app_url) as app_b:
            request = protocol_pb2.ProtocolMessage(open_session_request=chat_pb2.OpenSessionRequest(node_id="local"))
            ids = [f"dup-{number}" for number in range(20)]
            for envelope_id in ids:
                await asyncio.gather(app_a.send(request, envelope_id), app_b.send(request, envelope_id))
            for envelope_id in ids:
                on_a, on_b = await app_a.reply(envelope_id, TIMEOUT), await app_b.reply(envelope_id, TIMEOUT)
                assert on_a.open_session_response.WhichOneof("outcome") == "accepted", on_a
                assert on_a == on_b
        async with session_connect.SessionServiceClient(a.http, interceptors=[BearerKey(TOKEN)]) as sessions:
            listed = await sessions.list_sessions(session_pb2.ListSessionsRequest(page_size=100))
        assert len(listed.sessions) == len(ids)


async def test_tokens_created_and_revoked_on_one_replica_apply_on_the_other(database: str, tmp_path: Path) -> None:
    """A token created on A opens a connection on B within milliseconds; revoked on A, B closes that connection
    at once and refuses it; a token created before the revocation works on B."""
    with hub_replicas(tmp_path, database, 2) as (a, b):
        async with token_connect.TokenServiceClient(a.http, interceptors=[BearerKey(TOKEN)]) as tokens:
            old = (await tokens.create_token(token_pb2.CreateTokenRequest(name="old", scopes=["app"]))).secret
            async with await AppSocket.open(a.app_url, token=old) as on_a:
                await on_a.open_session()  # A knows it: created there
            new = (await tokens.create_token(token_pb2.CreateTokenRequest(name="new", scopes=["app"]))).secret
            started = time.monotonic()
            async with asyncio.timeout(TIMEOUT):
                while True:
                    try:
                        on_b = await AppSocket.open(b.app_url, token=old)
                    except InvalidStatus:  # 401 until B has read the new token
                        await asyncio.sleep(0.01)  # polling the condition, not waiting for time to pass
                        continue
                    break
            print(f"\ntoken created on A usable on B after {(time.monotonic() - started) * 1000:.1f} ms")
            async with on_b:
                await tokens.revoke_token(token_pb2.RevokeTokenRequest(name="old"))
                revoked_at = time.monotonic()
                closed = await on_b.closed(TIMEOUT)
                print(f"token revoked on A closed B's connection after {(time.monotonic() - revoked_at) * 1000:.1f} ms")
                assert closed == (1008, "token revoked")
            # B has re-read the tokens after both changes: "new" works there, "old" does not.
            async with await AppSocket.open(b.app_url, token=new) as with_new:
                await with_new.open_session()
            with pytest.raises(InvalidStatus) as refused:
                await AppSocket.open(b.app_url, token=old)
            assert refused.value.response.status_code == 401


async def test_a_configuration_change_on_one_replica_reaches_the_others(database: str, tmp_path: Path) -> None:
    """UpdateConfig on A: B and C serve the new configuration (and wrote it to their config.yaml)."""
    with hub_replicas(tmp_path, database, 3) as hubs:
        a, *others = hubs
        async with config_connect.ConfigServiceClient(a.http, interceptors=[BearerKey(TOKEN)]) as config_a:
            changed = default_config()
            changed.agent.system_prompt = "You answer in haiku."
            updated = await config_a.update_config(config_pb2.UpdateConfigRequest(config=changed, request_id="cfg-1"))
            assert updated.WhichOneof("outcome") == "accepted", updated
            changed_at = time.monotonic()
        for other in others:
            async with config_connect.ConfigServiceClient(other.http, interceptors=[BearerKey(TOKEN)]) as config:
                async with asyncio.timeout(TIMEOUT):
                    while True:
                        seen = await config.get_config(config_pb2.GetConfigRequest())
                        if seen.config.agent.system_prompt == "You answer in haiku.":
                            break
                        await asyncio.sleep(0.01)  # polling the condition, not waiting for time to pass
            print(
                f"\nconfiguration change on A served by {other.data_dir.name} after"
                f" {(time.monotonic() - changed_at) * 1000:.1f} ms"
            )
            assert ConfigStore(other.data_dir, environ={}).stored.agent.system_prompt == "You answer in haiku."


async def scan_when(client: ScanServiceClient, scan_id: str, status: int) -> scan_pb2.Scan:
    """The scan once it has ``status`` (polled through GetScan)."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            scan = (await client.get_scan(scan_pb2.GetScanRequest(scan_id=scan_id), headers=AUTH)).scan
            if scan.status == status:
                return scan
            await asyncio.sleep(0.02)  # polling the condition, not waiting for time to pass


async def test_one_leader_runs_scans_and_another_takes_over_when_it_is_killed(
    postgres: PostgresCluster, database: str, tmp_path: Path
) -> None:
    """r1 leads: a scan submitted to r2 runs on r1. kill -9 r1: r2 takes the lead, fails the scan r1 was
    running (hub_restarted) and runs the next one."""
    for name in ("r1", "r2"):
        config = default_config()
        config.scans.modes.add(name="say", task_template="Say {target}")
        ConfigStore(tmp_path / name, environ={}).save(config)
    long = " ".join(f"word{index}" for index in range(400))
    with hub_replicas(tmp_path, database, 2, "--echo-delay", "0.05", "--replica-lease", "2") as (r1, r2):
        leader = postgres.psql(
            "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'aophub scan leader %'"
            f" AND datname = '{database_name(database)}'"
            " AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')",
        ).split("\n")
        assert leader[0] == "aophub scan leader r1"
        async with ScanServiceClient(r2.http) as scans:
            submitted = await scans.submit_scan(
                scan_pb2.SubmitScanRequest(request_id="scan-1", target=long, mode="say"), headers=AUTH
            )
            assert submitted.accepted.status == scan_pb2.SCAN_STATUS_QUEUED
            scan_id = submitted.accepted.id
            await scan_when(scans, scan_id, scan_pb2.SCAN_STATUS_RUNNING)
            r1.kill()
            killed_at = time.monotonic()
            failed = await scan_when(scans, scan_id, scan_pb2.SCAN_STATUS_FAILED)
            takeover = time.monotonic() - killed_at
            print(f"\nscan leader takeover after kill -9: {takeover * 1000:.0f} ms (replica lease 2 s)")
            assert failed.error.code == "hub_restarted", failed.error
            second = await scans.submit_scan(
                scan_pb2.SubmitScanRequest(request_id="scan-2", target="short", mode="say"), headers=AUTH
            )
            done = await scan_when(scans, second.accepted.id, scan_pb2.SCAN_STATUS_COMPLETED)
            assert done.finished_at.seconds


def test_a_logout_notification_names_the_nonce_and_its_expiry() -> None:
    """The ``aophub_logout`` payload round-trips; anything else is not a logout (and is ignored)."""
    nonce = "A" * 22
    assert parse_logout(logout_payload(nonce, 1_800_000_000)) == (nonce, 1_800_000_000)
    for bad in ("", "1800000000", f"x {nonce}", f"1800000000 {nonce} extra", "1800000000 short", f"-1 {nonce}"):
        assert parse_logout(bad) is None, bad
