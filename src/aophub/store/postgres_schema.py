"""The PostgreSQL schema, its versioned migrations, database URLs, and the one place asyncpg errors become
:class:`StoreError`.

The schema version lives in the one-row table ``aophub_schema``. ``MIGRATIONS[n]`` takes it from
version n to n + 1; :func:`migrate` applies the missing ones in one transaction under an advisory
lock, so two processes migrating at once apply each migration once. A hub does not migrate a shared
database by itself (see :func:`check_schema`): ``aophub migrate`` does, when an operator says so.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from aophub.store.base import StoreError

__all__ = [
    "MIGRATIONS",
    "URL_SCHEMES",
    "check_schema",
    "connect",
    "connection_lost",
    "map_exceptions",
    "migrate",
    "migrate_database",
    "redact_url",
    "schema_version",
    "validate_url",
    "visible_sessions",
]

URL_SCHEMES = ("postgresql", "postgres")

# Advisory lock keys (pg_advisory_lock's bigint space; "aophub" in ASCII, then a purpose number).
MIGRATION_LOCK = 0x6170686F_00000001
# 2 was "one hub per database", replaced by replica membership (aophub.cluster.membership).
SCAN_LEADER_LOCK = 0x6170686F_00000003

# Text compares byte by byte (COLLATE "C"), as in SQLite, whatever the database's locale: the
# orders the store promises (sessions, turns, tokens) are then the same on both.
MIGRATIONS = (
    """
    CREATE TABLE sessions (
        id TEXT COLLATE "C" PRIMARY KEY,
        node_id TEXT COLLATE "C" NOT NULL,
        title TEXT COLLATE "C" NOT NULL,
        state TEXT COLLATE "C" NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        archived BOOLEAN NOT NULL,
        parent_session_id TEXT COLLATE "C" NOT NULL,
        parent_tool_call_id TEXT COLLATE "C" NOT NULL,
        close_reason TEXT COLLATE "C" NOT NULL,
        open_request BYTEA NOT NULL,
        seq_reserved BIGINT NOT NULL,
        -- the session's cursor counter: appends take the next cursors from it under the row's
        -- lock, in the transaction that inserts the events, so cursors are dense and commit in
        -- order even with several writers
        last_cursor BIGINT NOT NULL DEFAULT 0,
        event_count BIGINT NOT NULL DEFAULT 0,
        max_event_seq BIGINT NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_update ON sessions (updated_at, id);
    CREATE TABLE events (
        session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id),
        cursor BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        event_id TEXT COLLATE "C" NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (session_id, cursor)
    );
    CREATE TABLE turns (
        session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id),
        turn_id TEXT COLLATE "C" NOT NULL,
        state TEXT COLLATE "C" NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        request BYTEA NOT NULL,
        ended_at DOUBLE PRECISION NOT NULL,
        stop_reason TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    );
    CREATE INDEX turns_by_state ON turns (state, session_id, created_at);
    CREATE TABLE journal (
        key TEXT COLLATE "C" PRIMARY KEY,
        method TEXT COLLATE "C" NOT NULL,
        fingerprint BYTEA NOT NULL,
        response BYTEA NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE interactions (
        position BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        id TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id),
        turn_id TEXT COLLATE "C" NOT NULL,
        state INTEGER NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE INDEX interactions_by_session ON interactions (session_id, state);
    CREATE INDEX interactions_by_state ON interactions (state);
    CREATE TABLE scans (
        id TEXT COLLATE "C" PRIMARY KEY,
        status INTEGER NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE INDEX scans_by_creation ON scans (created_at, id);
    CREATE INDEX scans_by_status ON scans (status);
    -- the archive's cursor comes from a counter row, not a sequence: a sequence value is taken
    -- before commit, so with two writers cursor 11 could become visible before 10 and a reader
    -- paging past 11 would never see 10; the row lock makes archive cursors commit in order
    CREATE TABLE counters (
        name TEXT COLLATE "C" PRIMARY KEY,
        value BIGINT NOT NULL
    );
    INSERT INTO counters (name, value) VALUES ('artifacts', 0);
    CREATE TABLE artifacts (
        cursor BIGINT PRIMARY KEY,
        event_id TEXT COLLATE "C" NOT NULL UNIQUE,
        session_id TEXT COLLATE "C" NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE INDEX artifacts_by_session ON artifacts (session_id, cursor);
    CREATE TABLE tokens (
        id TEXT COLLATE "C" PRIMARY KEY,
        name TEXT COLLATE "C" NOT NULL UNIQUE,
        scopes TEXT[] NOT NULL,
        node_id TEXT COLLATE "C" NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION,
        salt BYTEA NOT NULL,
        digest BYTEA NOT NULL
    );
    -- One group of buffered writes in one call (see aophub.store.postgres_writer): a single
    -- statement is a transaction by itself, so a group costs one round trip, not one per kind of
    -- write plus BEGIN and COMMIT. Returns the appends' cursors in op order.
    CREATE FUNCTION aophub_write(
        s_id TEXT[], s_node_id TEXT[], s_title TEXT[], s_state TEXT[], s_created_at FLOAT8[],
        s_updated_at FLOAT8[], s_archived BOOLEAN[], s_parent_session_id TEXT[],
        s_parent_tool_call_id TEXT[], s_close_reason TEXT[], s_open_request BYTEA[], s_seq_reserved BIGINT[],
        t_session_id TEXT[], t_turn_id TEXT[], t_state TEXT[], t_created_at FLOAT8[], t_request BYTEA[],
        t_ended_at FLOAT8[], t_stop_reason TEXT[],
        j_key TEXT[], j_method TEXT[], j_fingerprint BYTEA[], j_response BYTEA[], j_created_at FLOAT8[],
        r_id TEXT[], r_upto BIGINT[],
        e_session_id TEXT[], e_seq BIGINT[], e_event_id TEXT[], e_data BYTEA[],
        must_exist TEXT[]
    ) RETURNS BIGINT[] LANGUAGE plpgsql AS $$
    DECLARE
        missing TEXT;
        cursors BIGINT[];
    BEGIN
        SELECT m INTO missing FROM unnest(must_exist) AS m
            WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = m) ORDER BY m LIMIT 1;
        IF missing IS NOT NULL THEN
            RAISE EXCEPTION 'session % used before it was put', quote_literal(missing)
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF cardinality(s_id) > 0 THEN
            INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived,
                    parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved)
                SELECT * FROM unnest(s_id, s_node_id, s_title, s_state, s_created_at, s_updated_at, s_archived,
                    s_parent_session_id, s_parent_tool_call_id, s_close_reason, s_open_request, s_seq_reserved)
                ON CONFLICT (id) DO UPDATE SET node_id = excluded.node_id, title = excluded.title,
                    state = excluded.state, created_at = excluded.created_at, updated_at = excluded.updated_at,
                    archived = excluded.archived, parent_session_id = excluded.parent_session_id,
                    parent_tool_call_id = excluded.parent_tool_call_id, close_reason = excluded.close_reason,
                    open_request = excluded.open_request,
                    seq_reserved = GREATEST(sessions.seq_reserved, excluded.seq_reserved);
        END IF;
        IF cardinality(t_session_id) > 0 THEN
            INSERT INTO turns (session_id, turn_id, state, created_at, request, ended_at, stop_reason)
                SELECT * FROM unnest(t_session_id, t_turn_id, t_state, t_created_at, t_request, t_ended_at,
                    t_stop_reason)
                ON CONFLICT (session_id, turn_id) DO UPDATE SET state = excluded.state,
                    created_at = excluded.created_at, request = excluded.request, ended_at = excluded.ended_at,
                    stop_reason = excluded.stop_reason;
        END IF;
        IF cardinality(j_key) > 0 THEN
            INSERT INTO journal (key, method, fingerprint, response, created_at)
                SELECT * FROM unnest(j_key, j_method, j_fingerprint, j_response, j_created_at)
                ON CONFLICT (key) DO NOTHING;
        END IF;
        IF cardinality(r_id) > 0 THEN
            UPDATE sessions AS s SET seq_reserved = GREATEST(s.seq_reserved, v.upto)
                FROM unnest(r_id, r_upto) AS v(id, upto) WHERE s.id = v.id;
        END IF;
        IF cardinality(e_session_id) > 0 THEN
            -- each session's counter takes all of its appends at once, under the row's lock
            WITH ev AS (
                SELECT u.*, row_number() OVER (PARTITION BY u.sid ORDER BY u.ord) AS rank
                FROM unnest(e_session_id, e_seq, e_event_id, e_data) WITH ORDINALITY AS u(sid, seq, eid, data, ord)
            ), totals AS (
                SELECT sid, count(*) AS added, max(seq) AS max_seq FROM ev GROUP BY sid
            ), bumped AS (
                UPDATE sessions AS s SET last_cursor = s.last_cursor + t.added,
                    event_count = s.event_count + t.added, max_event_seq = GREATEST(s.max_event_seq, t.max_seq)
                FROM totals AS t WHERE s.id = t.sid
                RETURNING s.id, s.last_cursor - t.added AS base
            ), placed AS (
                SELECT ev.sid, ev.seq, ev.eid, ev.data, ev.ord, b.base + ev.rank AS cursor
                FROM ev LEFT JOIN bumped AS b ON b.id = ev.sid
            ), inserted AS (
                INSERT INTO events (session_id, cursor, seq, event_id, data)
                SELECT sid, cursor, seq, eid, data FROM placed WHERE cursor IS NOT NULL
            )
            SELECT array_agg(cursor ORDER BY ord) INTO cursors FROM placed;
            SELECT sid INTO missing FROM unnest(e_session_id, cursors) AS c(sid, cursor)
                WHERE cursor IS NULL ORDER BY sid LIMIT 1;
            IF missing IS NOT NULL THEN
                RAISE EXCEPTION 'append to unknown session %', quote_literal(missing)
                    USING ERRCODE = 'foreign_key_violation';
            END IF;
        END IF;
        RETURN cursors;
    END
    $$;
    """,
    # Per-session ownership: sessions and scans stored before it belong to the access key's "admin".
    # A session's shares are a text array (token names and "*" matched whole, see visible_sessions);
    # aophub_write takes each session's shares joined by "," (token names hold no ",").
    """
    ALTER TABLE sessions ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT 'admin',
        ADD COLUMN shared_with TEXT[] NOT NULL DEFAULT '{}';
    CREATE INDEX sessions_by_owner ON sessions (owner, updated_at, id);
    ALTER TABLE scans ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT 'admin';
    CREATE INDEX scans_by_owner ON scans (owner, created_at, id);
    DROP FUNCTION aophub_write(
        TEXT[], TEXT[], TEXT[], TEXT[], FLOAT8[], FLOAT8[], BOOLEAN[], TEXT[], TEXT[], TEXT[], BYTEA[], BIGINT[],
        TEXT[], TEXT[], TEXT[], FLOAT8[], BYTEA[], FLOAT8[], TEXT[],
        TEXT[], TEXT[], BYTEA[], BYTEA[], FLOAT8[],
        TEXT[], BIGINT[],
        TEXT[], BIGINT[], TEXT[], BYTEA[],
        TEXT[]
    );
    CREATE FUNCTION aophub_write(
        s_id TEXT[], s_node_id TEXT[], s_title TEXT[], s_state TEXT[], s_created_at FLOAT8[],
        s_updated_at FLOAT8[], s_archived BOOLEAN[], s_parent_session_id TEXT[],
        s_parent_tool_call_id TEXT[], s_close_reason TEXT[], s_open_request BYTEA[], s_seq_reserved BIGINT[],
        s_owner TEXT[], s_shared_with TEXT[],
        t_session_id TEXT[], t_turn_id TEXT[], t_state TEXT[], t_created_at FLOAT8[], t_request BYTEA[],
        t_ended_at FLOAT8[], t_stop_reason TEXT[],
        j_key TEXT[], j_method TEXT[], j_fingerprint BYTEA[], j_response BYTEA[], j_created_at FLOAT8[],
        r_id TEXT[], r_upto BIGINT[],
        e_session_id TEXT[], e_seq BIGINT[], e_event_id TEXT[], e_data BYTEA[],
        must_exist TEXT[]
    ) RETURNS BIGINT[] LANGUAGE plpgsql AS $$
    DECLARE
        missing TEXT;
        cursors BIGINT[];
    BEGIN
        SELECT m INTO missing FROM unnest(must_exist) AS m
            WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = m) ORDER BY m LIMIT 1;
        IF missing IS NOT NULL THEN
            RAISE EXCEPTION 'session % used before it was put', quote_literal(missing)
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        IF cardinality(s_id) > 0 THEN
            INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived,
                    parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved, owner,
                    shared_with)
                SELECT u.id, u.node_id, u.title, u.state, u.created_at, u.updated_at, u.archived,
                    u.parent_session_id, u.parent_tool_call_id, u.close_reason, u.open_request, u.seq_reserved,
                    u.owner, string_to_array(u.shared_with, ',')
                FROM unnest(s_id, s_node_id, s_title, s_state, s_created_at, s_updated_at, s_archived,
                    s_parent_session_id, s_parent_tool_call_id, s_close_reason, s_open_request, s_seq_reserved,
                    s_owner, s_shared_with) AS u(id, node_id, title, state, created_at, updated_at, archived,
                    parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved, owner,
                    shared_with)
                ON CONFLICT (id) DO UPDATE SET node_id = excluded.node_id, title = excluded.title,
                    state = excluded.state, created_at = excluded.created_at, updated_at = excluded.updated_at,
                    archived = excluded.archived, parent_session_id = excluded.parent_session_id,
                    parent_tool_call_id = excluded.parent_tool_call_id, close_reason = excluded.close_reason,
                    open_request = excluded.open_request, owner = excluded.owner,
                    shared_with = excluded.shared_with,
                    seq_reserved = GREATEST(sessions.seq_reserved, excluded.seq_reserved);
        END IF;
        IF cardinality(t_session_id) > 0 THEN
            INSERT INTO turns (session_id, turn_id, state, created_at, request, ended_at, stop_reason)
                SELECT * FROM unnest(t_session_id, t_turn_id, t_state, t_created_at, t_request, t_ended_at,
                    t_stop_reason)
                ON CONFLICT (session_id, turn_id) DO UPDATE SET state = excluded.state,
                    created_at = excluded.created_at, request = excluded.request, ended_at = excluded.ended_at,
                    stop_reason = excluded.stop_reason;
        END IF;
        IF cardinality(j_key) > 0 THEN
            INSERT INTO journal (key, method, fingerprint, response, created_at)
                SELECT * FROM unnest(j_key, j_method, j_fingerprint, j_response, j_created_at)
                ON CONFLICT (key) DO NOTHING;
        END IF;
        IF cardinality(r_id) > 0 THEN
            UPDATE sessions AS s SET seq_reserved = GREATEST(s.seq_reserved, v.upto)
                FROM unnest(r_id, r_upto) AS v(id, upto) WHERE s.id = v.id;
        END IF;
        IF cardinality(e_session_id) > 0 THEN
            -- each session's counter takes all of its appends at once, under the row's lock
            WITH ev AS (
                SELECT u.*, row_number() OVER (PARTITION BY u.sid ORDER BY u.ord) AS rank
                FROM unnest(e_session_id, e_seq, e_event_id, e_data) WITH ORDINALITY AS u(sid, seq, eid, data, ord)
            ), totals AS (
                SELECT sid, count(*) AS added, max(seq) AS max_seq FROM ev GROUP BY sid
            ), bumped AS (
                UPDATE sessions AS s SET last_cursor = s.last_cursor + t.added,
                    event_count = s.event_count + t.added, max_event_seq = GREATEST(s.max_event_seq, t.max_seq)
                FROM totals AS t WHERE s.id = t.sid
                RETURNING s.id, s.last_cursor - t.added AS base
            ), placed AS (
                SELECT ev.sid, ev.seq, ev.eid, ev.data, ev.ord, b.base + ev.rank AS cursor
                FROM ev LEFT JOIN bumped AS b ON b.id = ev.sid
            ), inserted AS (
                INSERT INTO events (session_id, cursor, seq, event_id, data)
                SELECT sid, cursor, seq, eid, data FROM placed WHERE cursor IS NOT NULL
            )
            SELECT array_agg(cursor ORDER BY ord) INTO cursors FROM placed;
            SELECT sid INTO missing FROM unnest(e_session_id, cursors) AS c(sid, cursor)
                WHERE cursor IS NULL ORDER BY sid LIMIT 1;
            IF missing IS NOT NULL THEN
                RAISE EXCEPTION 'append to unknown session %', quote_literal(missing)
                    USING ERRCODE = 'foreign_key_violation';
            END IF;
        END IF;
        RETURN cursors;
    END
    $$;
    """,
    # Dialect bridges (bridges.md 1.4, 2.2.3): bindings and the request log, as SQLite's migration 6.
    # A log entry's turns are a text array (compared whole by the writes' compare-and-set).
    """
    CREATE TABLE bridge_bindings (
        dialect TEXT COLLATE "C" NOT NULL,
        principal TEXT COLLATE "C" NOT NULL,
        scope TEXT COLLATE "C" NOT NULL,
        session_id TEXT COLLATE "C" NOT NULL,
        node_id TEXT COLLATE "C" NOT NULL,
        generation BIGINT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (dialect, principal, scope)
    );
    CREATE INDEX bridge_bindings_by_session ON bridge_bindings (session_id);
    CREATE TABLE bridge_requests (
        key TEXT COLLATE "C" PRIMARY KEY,
        kind TEXT COLLATE "C" NOT NULL,
        attempt BIGINT NOT NULL,
        continue_attempt BIGINT NOT NULL,
        session_id TEXT COLLATE "C" NOT NULL,
        request_id TEXT COLLATE "C" NOT NULL,
        turns TEXT[] COLLATE "C" NOT NULL,
        start_cursor TEXT COLLATE "C" NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX bridge_requests_by_session ON bridge_requests (session_id);
    CREATE INDEX bridge_requests_by_creation ON bridge_requests (created_at);
    """,
    # Subagents (issue 18): background tasks of a session's agent, run in child sessions.
    """
    CREATE TABLE subagents (
        id TEXT COLLATE "C" PRIMARY KEY,
        parent_session_id TEXT COLLATE "C" NOT NULL,
        status INTEGER NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE INDEX subagents_by_parent ON subagents (parent_session_id, created_at, id);
    CREATE INDEX subagents_by_status ON subagents (status);
    """,
    # Replicas (aophub.cluster): each `aophub serve` on the database registers here and heartbeats;
    # times are the database server's clock (seconds since the epoch), so replicas on machines whose
    # clocks differ agree on who is alive. The shared configuration document (config.yaml's content
    # as the hub last saved it) is one row whose version counts its changes. Triggers notify the
    # replicas of what changed (NOTIFY is sent at commit, so whoever writes, even `aophub token`
    # on its own, wakes every replica): a session's new last cursor, the tokens, the configuration,
    # a scan. A notification is a wake-up only: the listener reads the rows.
    """
    CREATE TABLE replicas (
        id TEXT COLLATE "C" PRIMARY KEY,
        address TEXT COLLATE "C" NOT NULL,
        started_at DOUBLE PRECISION NOT NULL,
        heartbeat_at DOUBLE PRECISION NOT NULL,
        state TEXT COLLATE "C" NOT NULL CHECK (state IN ('ready', 'draining'))
    );
    CREATE INDEX replicas_by_heartbeat ON replicas (heartbeat_at);
    CREATE TABLE shared_config (
        name TEXT COLLATE "C" PRIMARY KEY,
        version BIGINT NOT NULL,
        document BYTEA NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        updated_by TEXT COLLATE "C" NOT NULL
    );
    CREATE FUNCTION aophub_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('aophub_events', NEW.id || ' ' || NEW.last_cursor);
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER sessions_notify_events AFTER UPDATE OF last_cursor ON sessions
        FOR EACH ROW WHEN (NEW.last_cursor <> OLD.last_cursor) EXECUTE FUNCTION aophub_notify_events();
    CREATE FUNCTION aophub_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify(TG_ARGV[0], '');
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER tokens_notify AFTER INSERT OR UPDATE OR DELETE ON tokens
        FOR EACH STATEMENT EXECUTE FUNCTION aophub_notify_changed('aophub_tokens');
    CREATE TRIGGER shared_config_notify AFTER INSERT OR UPDATE OR DELETE ON shared_config
        FOR EACH STATEMENT EXECUTE FUNCTION aophub_notify_changed('aophub_config');
    CREATE TRIGGER scans_notify AFTER INSERT OR UPDATE OF status ON scans
        FOR EACH STATEMENT EXECUTE FUNCTION aophub_notify_changed('aophub_scans');
    """,
    # Session ownership between replicas (aophub.cluster.ownership): a lease per session (the
    # replica that owns it and an epoch counting owner changes) and per node (the replica it is
    # connected to). A lease lives as long as its replica's row in ``replicas`` does (schema
    # version 5): the replica's heartbeat renews every lease it holds at once. A replica names
    # itself in its connections' setting aophub.replica_id; a write of events or turns by a
    # replica into a session whose lease another replica holds fails (SQLSTATE AO001), so a
    # replica that lost a session can never write into it again, whatever it still has in memory.
    # The FOR SHARE lock orders such a write against a takeover (an UPDATE of the lease row): the
    # new owner, reading the session's turns after its takeover committed, sees every write of the
    # old owner that got in. Connections that name no replica (aophub migrate) are not fenced.
    # The cluster secret authenticates replica-to-replica calls (forwarded requests).
    """
    CREATE TABLE session_leases (
        session_id TEXT COLLATE "C" PRIMARY KEY,
        replica_id TEXT COLLATE "C" NOT NULL,
        epoch BIGINT NOT NULL
    );
    CREATE INDEX session_leases_by_replica ON session_leases (replica_id);
    CREATE TABLE node_leases (
        node_id TEXT COLLATE "C" PRIMARY KEY,
        replica_id TEXT COLLATE "C" NOT NULL,
        epoch BIGINT NOT NULL
    );
    CREATE INDEX node_leases_by_replica ON node_leases (replica_id);
    CREATE TABLE cluster_secret (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        secret BYTEA NOT NULL
    );
    CREATE FUNCTION aophub_fence() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        me TEXT := coalesce(current_setting('aophub.replica_id', true), '');
        holder RECORD;
    BEGIN
        IF me = '' THEN
            RETURN NULL;
        END IF;
        FOR holder IN
            SELECT l.session_id, l.replica_id FROM session_leases AS l
            WHERE l.session_id IN (SELECT DISTINCT c.session_id FROM changed AS c)
            ORDER BY l.session_id FOR SHARE
        LOOP
            IF holder.replica_id <> me THEN
                RAISE EXCEPTION 'session % is owned by replica %, not %', quote_literal(holder.session_id),
                    quote_literal(holder.replica_id), quote_literal(me) USING ERRCODE = 'AO001';
            END IF;
        END LOOP;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER events_fenced AFTER INSERT ON events REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION aophub_fence();
    CREATE TRIGGER turns_fenced_insert AFTER INSERT ON turns REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION aophub_fence();
    CREATE TRIGGER turns_fenced_update AFTER UPDATE ON turns REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION aophub_fence();
    """,
    # The cluster's node list (aophub.cluster.agent_views): what AgentService shows of each external
    # node, written by the replica it is connected to (the serialized aophub.v1.Agent), online or
    # since it left. A node is online in the cluster while its row says so and its replica is alive
    # (its row in ``replicas`` has a fresh heartbeat). Each change notifies ``aophub_nodes`` with the
    # node id; the replicas read the row.
    """
    CREATE TABLE node_views (
        node_id TEXT COLLATE "C" PRIMARY KEY,
        replica_id TEXT COLLATE "C" NOT NULL,
        online BOOLEAN NOT NULL,
        view BYTEA NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX node_views_by_replica ON node_views (replica_id);
    CREATE FUNCTION aophub_notify_node() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            PERFORM pg_notify('aophub_nodes', OLD.node_id);
        ELSE
            PERFORM pg_notify('aophub_nodes', NEW.node_id);
        END IF;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER node_views_notify AFTER INSERT OR UPDATE OR DELETE ON node_views
        FOR EACH ROW EXECUTE FUNCTION aophub_notify_node();
    """,
)

# The channels of the notifications above (aophub.cluster listens to them).
EVENTS_CHANNEL = "aophub_events"  # payload "SESSION_ID LAST_CURSOR"
TOKENS_CHANNEL = "aophub_tokens"
CONFIG_CHANNEL = "aophub_config"
SCANS_CHANNEL = "aophub_scans"
NODES_CHANNEL = "aophub_nodes"  # payload "NODE_ID"

# SQLSTATE classes and codes -> (what the operator reads, retryable). Codes win over their class.
_SQLSTATES: dict[str, tuple[str, bool]] = {
    "23": ("constraint failed", False),
    "53100": ("disk full", True),
    "53": ("out of resources", True),
    "40001": ("conflicting writes", True),
    "40P01": ("conflicting writes", True),
    "08": ("database connection lost", True),
    "57P01": ("database server is shutting down", True),
    "57P02": ("database server is shutting down", True),
    "57P03": ("database server is starting up", True),
    "58": ("I/O error", True),
    "XX001": ("database is corrupt", False),
    "XX002": ("database is corrupt", False),
    "28P01": ("access denied (wrong user or password)", False),
    "28": ("access denied", False),
    "3D000": ("database does not exist", False),
    "25006": ("database is read-only", True),
    "55P03": ("waited too long for a lock", True),
    "AO001": ("session owned by another replica", False),
}


def _kind(sqlstate: str) -> tuple[str, bool]:
    return _SQLSTATES.get(sqlstate) or _SQLSTATES.get(sqlstate[:2]) or ("database error", False)


@contextmanager
def map_exceptions(action: str) -> Iterator[None]:
    """Turn asyncpg and OS errors raised inside the block into :class:`StoreError`.

    ``action`` says what was being done ("writing", "connecting to postgresql://db.example/hub")
    and goes into the message after a kind such as "database connection lost". A lost connection,
    a server that is down, a full disk or conflicting writers are retryable; a violated constraint,
    refused credentials or a missing database are not.
    """
    try:
        yield
    except asyncpg.PostgresError as exc:
        kind, retryable = _kind(str(exc.sqlstate or ""))
        raise StoreError(f"{kind}: {action}: {exc}", retryable=retryable) from exc
    except (asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError) as exc:
        # A closed or broken connection ("connection is closed", "cannot perform operation").
        raise StoreError(f"database connection lost: {action}: {exc}", retryable=True) from exc
    except (TimeoutError, ConnectionError, OSError, ssl.SSLError) as exc:
        refused = isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED
        if isinstance(exc, socket.gaierror):
            kind = "cannot resolve the database host"
        elif refused or isinstance(exc, TimeoutError):
            kind = "cannot reach the database server"
        else:
            kind = "network error"
        raise StoreError(f"{kind}: {action}: {exc or type(exc).__name__}", retryable=True) from exc


def visible_sessions(parameter: int) -> str:
    """The sessions a token name sees (its own, those shared with it or with everyone) as an SQL condition.

    The name is query parameter number ``parameter``; it is compared whole with the ``owner`` and
    each element of ``shared_with`` of the sessions table, never as a pattern.
    """
    return f"(owner = ${parameter} OR shared_with && ARRAY[${parameter}, '*']::text[])"


def connection_lost(error: StoreError) -> bool:
    """Whether ``error`` (from :func:`map_exceptions`) came from a connection that was closed or broke."""
    cause = error.__cause__
    return isinstance(
        cause, asyncpg.InterfaceError | asyncpg.PostgresConnectionError | ConnectionError | asyncpg.AdminShutdownError
    )


def validate_url(url: str) -> str:
    """``url`` if it is a PostgreSQL URL this hub can use, else ValueError saying what is wrong.

    Forms: ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` (``postgres://`` too), with any part
    left out taken from libpq's defaults and environment (``$PGHOST``, ``$PGPASSWORD``, ``~/.pgpass``),
    and query parameters such as ``?sslmode=require`` or ``?host=/run/postgresql`` (a Unix socket).
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError as error:
        raise ValueError(f"bad database URL: {error}") from None
    if parts.scheme not in URL_SCHEMES:
        shown = f"{parts.scheme}://" if parts.scheme else "no scheme"
        raise ValueError(f"not a PostgreSQL URL ({shown}): expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
    try:
        parts.port  # noqa: B018 - parsing it checks it
    except ValueError:
        raise ValueError(f"bad port in the database URL {redact_url(url)!r}") from None
    return url.strip()


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (for logs and messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


async def connect(
    url: str,
    *,
    timeout: float,
    synchronous_commit: bool = True,
    application_name: str = "aophub",
    replica_id: str = "",
) -> asyncpg.Connection:
    """One connection to ``url``; raises :class:`StoreError` saying why not (unreachable, refused, missing).

    ``application_name`` shows in ``pg_stat_activity`` (an operator tells the connections apart by it).
    ``replica_id`` names the hub replica the connection writes for (``aophub.replica_id``), which
    fences its writes into sessions other replicas own (see the schema's ``aophub_fence``).
    """
    settings = {"application_name": application_name}
    if replica_id:
        settings["aophub.replica_id"] = replica_id
    if not synchronous_commit:
        settings["synchronous_commit"] = "off"
    with map_exceptions(f"connecting to {redact_url(url)}"):
        return await asyncpg.connect(url, timeout=timeout, server_settings=settings)


async def schema_version(connection: asyncpg.Connection) -> int:
    """The database's schema version: 0 for a database aophub never migrated."""
    with map_exceptions("reading the schema version"):
        exists = await connection.fetchval("SELECT to_regclass('aophub_schema') IS NOT NULL")
        if not exists:
            return 0
        return int(await connection.fetchval("SELECT version FROM aophub_schema"))


async def migrate(connection: asyncpg.Connection) -> tuple[int, int]:
    """Apply the missing migrations in one transaction; ``(version before, version after)``.

    Refuses (non-retryable StoreError) a database of a newer schema than this aophub knows.
    """
    with map_exceptions("migrating the schema"):
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            before = await schema_version(connection)
            _refuse_newer(before)
            if before == 0:
                await connection.execute("CREATE TABLE aophub_schema (version INTEGER NOT NULL)")
                await connection.execute("INSERT INTO aophub_schema (version) VALUES (0)")
            for target, script in enumerate(MIGRATIONS[before:], start=before + 1):
                await connection.execute(script)
                await connection.execute("UPDATE aophub_schema SET version = $1", target)
    return before, len(MIGRATIONS)


async def migrate_database(url: str, *, timeout: float = 10.0) -> tuple[int, int]:
    """Connect to ``url`` and apply the missing migrations (see :func:`migrate`); raises StoreError."""
    db = await connect(url, timeout=timeout)
    try:
        return await migrate(db)
    finally:
        with map_exceptions("closing the connection"):
            await db.close(timeout=timeout)


async def check_schema(connection: asyncpg.Connection) -> None:
    """Raise a non-retryable StoreError unless the schema is exactly the one this aophub knows."""
    version = await schema_version(connection)
    _refuse_newer(version)
    if version < len(MIGRATIONS):
        raise StoreError(
            f"the database has schema version {version}, this aophub needs {len(MIGRATIONS)}:"
            " run `aophub migrate --database URL` first",
            retryable=False,
        )


def _refuse_newer(version: int) -> None:
    if version > len(MIGRATIONS):
        raise StoreError(
            f"the database has schema version {version}, newer than this aophub knows ({len(MIGRATIONS)})",
            retryable=False,
        )
