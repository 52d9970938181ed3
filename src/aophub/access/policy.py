"""What each request needs: the one table of scopes for every RPC, WebSocket request and endpoint.

``tests/test_access_policy.py`` builds its cases from the service descriptors and the namespace
messages, so a method or request case missing here fails the suite. Anything not in the table
needs ``admin`` (deny by default).

The rules: reading (lists, watches, status) needs ``read``; acting as a person's application
(sessions, turns, interactions, scans, artifacts) needs ``app``, which includes ``read``; the
remote workspace on a node needs its own scope: uploads ``workspace``, every terminal message
``terminal`` (AOP-workspace 8; the application endpoint itself still needs ``read``); the
hub's configuration and tokens need ``admin``; the node endpoint needs ``node`` (and a node id the
token's pattern matches). ConfigService is admin-only entirely: GetConfig shows endpoints and
profiles, and TestLLM / ListModels / TestConnection make the hub call out on the caller's behalf.
"""

from __future__ import annotations

from typing import Final

from aophub.access.scopes import Scope

__all__ = [
    "APPLICATION_ENDPOINT",
    "APPLICATION_REQUESTS",
    "ENDPOINTS",
    "NODE_ENDPOINT",
    "RPC_METHODS",
    "application_request_scope",
    "rpc_scope",
]

ADMIN, APP, READ, NODE = Scope.ADMIN, Scope.APP, Scope.READ, Scope.NODE
WORKSPACE, TERMINAL = Scope.WORKSPACE, Scope.TERMINAL

# Every method of every aophub.v1 service, by its path "<package>.<Service>/<Method>".
RPC_METHODS: Final[dict[str, Scope]] = {
    "aophub.v1.SessionService/ListSessions": READ,
    "aophub.v1.SessionService/GetSession": READ,
    "aophub.v1.SessionService/UpdateSession": APP,
    "aophub.v1.SessionService/ResetSession": APP,
    "aophub.v1.SessionService/DeleteSession": APP,
    "aophub.v1.SessionService/ListCommands": READ,
    "aophub.v1.SessionService/RunCommand": APP,
    "aophub.v1.SessionService/ListEvents": READ,
    # Only the owner or an admin may; checked per session (aophub.access.ownership).
    "aophub.v1.SessionService/ShareSession": APP,
    "aophub.v1.SessionService/UnshareSession": APP,
    "aophub.v1.SessionService/SummarizeSession": APP,
    "aophub.v1.ScanService/SubmitScan": APP,
    "aophub.v1.ScanService/GetScan": READ,
    "aophub.v1.ScanService/ListScans": READ,
    "aophub.v1.ScanService/CancelScan": APP,
    "aophub.v1.ScanService/GetScanReport": READ,
    # A session's subagents: seen by whoever sees the parent session, canceled by whoever acts in it.
    "aophub.v1.SubagentService/ListSubagents": READ,
    "aophub.v1.SubagentService/CancelSubagent": APP,
    "aophub.v1.InteractionService/AnswerInteraction": APP,
    "aophub.v1.InteractionService/ListInteractions": READ,
    "aophub.v1.ArtifactService/SyncArtifacts": APP,
    "aophub.v1.AgentService/ListAgents": READ,
    "aophub.v1.AgentService/WatchAgents": READ,
    "aophub.v1.SystemService/GetStatus": READ,
    "aophub.v1.ConfigService/GetConfig": ADMIN,
    "aophub.v1.ConfigService/UpdateConfig": ADMIN,
    "aophub.v1.ConfigService/ActivateProfile": ADMIN,
    "aophub.v1.ConfigService/TestLLM": ADMIN,
    "aophub.v1.ConfigService/ListModels": ADMIN,
    "aophub.v1.ConfigService/TestConnection": ADMIN,
    "aophub.v1.TokenService/CreateToken": ADMIN,
    "aophub.v1.MemoryService/ListMemory": ADMIN,
    "aophub.v1.MemoryService/AddMemory": ADMIN,
    "aophub.v1.MemoryService/EditMemory": ADMIN,
    "aophub.v1.MemoryService/DeleteMemory": ADMIN,
    "aophub.v1.MemoryService/SearchMemory": ADMIN,
    # Node-wide agent state, like the memory and the configuration.
    "aophub.v1.SkillService/ListSkills": ADMIN,
    "aophub.v1.SkillService/GetSkill": ADMIN,
    "aophub.v1.SkillService/EnableSkill": ADMIN,
    "aophub.v1.SkillService/DisableSkill": ADMIN,
    "aophub.v1.TokenService/ListTokens": ADMIN,
    "aophub.v1.TokenService/RevokeToken": ADMIN,
}

# Every case of every namespace message on the application endpoint, as "<message>.<case>":
# the scope a request case needs, or None for a case applications do not send (the hub's replies
# and events, the node side), which the hub refuses as UNSUPPORTED_MESSAGE whoever sends it.
APPLICATION_REQUESTS: Final[dict[str, Scope | None]] = {
    "aop.ProtocolMessage.open_session_request": APP,
    "aop.ProtocolMessage.run_turn_request": APP,
    "aop.ProtocolMessage.cancel_turn_request": APP,
    "aop.ProtocolMessage.close_session_request": APP,
    "aop.ProtocolMessage.watch_events_request": READ,
    "aop.ProtocolMessage.list_events_request": READ,
    # Ends one of the connection's own watches: whoever may watch may stop watching.
    "aop.ProtocolMessage.cancel_operation": READ,
    "aop.ProtocolMessage.agent_hello": None,
    "aop.ProtocolMessage.agent_accepted": None,
    "aop.ProtocolMessage.agent_status": None,
    "aop.ProtocolMessage.agent_stats": None,
    "aop.ProtocolMessage.open_session_response": None,
    "aop.ProtocolMessage.run_turn_response": None,
    "aop.ProtocolMessage.cancel_turn_response": None,
    "aop.ProtocolMessage.close_session_response": None,
    "aop.ProtocolMessage.list_events_response": None,
    "aop.ProtocolMessage.event": None,
    "aop.ProtocolMessage.protocol_error": None,
    "aophub.v1.InteractionProtocolMessage.answer_request": APP,
    "aophub.v1.InteractionProtocolMessage.answer_response": None,
    "aophub.v1.InteractionProtocolMessage.requested": None,
    "aophub.v1.InteractionProtocolMessage.resolved": None,
    "aophub.v1.ScanProtocolMessage.watch_scan_request": READ,
    "aophub.v1.ScanProtocolMessage.snapshot": None,
    "aophub.v1.ScanProtocolMessage.update": None,
    "aophub.v1.ScanProtocolMessage.event": None,
    "aophub.v1.ScanProtocolMessage.rejected": None,
    # The node channel's subagent namespace: nothing of it is an application request.
    "aophub.v1.SubagentProtocolMessage.spawn_request": None,
    "aophub.v1.SubagentProtocolMessage.list_request": None,
    "aophub.v1.SubagentProtocolMessage.cancel_request": None,
    "aophub.v1.SubagentProtocolMessage.answer": None,
    "aophub.v1.SubagentProtocolMessage.finished": None,
    # Slash commands (AOP-nodes 9.7.1), in both generations' namespace.
    "aiscan.command.CommandProtocolMessage.request": APP,
    "aiscan.command.CommandProtocolMessage.catalog": None,
    "aiscan.command.CommandProtocolMessage.receipt": None,
    "aiscan.command.CommandProtocolMessage.result": None,
    "cyber.command.CommandProtocolMessage.request": APP,
    "cyber.command.CommandProtocolMessage.catalog": None,
    "cyber.command.CommandProtocolMessage.receipt": None,
    "cyber.command.CommandProtocolMessage.result": None,
    # File and exec calls addressed to a session or node (aophub's, beyond AOP-workspace 8.7).
    "aophub.v1.WorkspaceProtocolMessage.call": WORKSPACE,
    "aophub.v1.WorkspaceProtocolMessage.file": None,
    "aophub.v1.WorkspaceProtocolMessage.exec": None,
    # The remote workspace (AOP-workspace 8.1.1): uploads only in aop.file (read, write, list and
    # mkdir name no node, 8.7: refused as UNSUPPORTED_MESSAGE), every aop.pty case relayed.
    "aop.file.ProtocolMessage.upload_request": WORKSPACE,
    "aop.file.ProtocolMessage.read_request": None,
    "aop.file.ProtocolMessage.write_request": None,
    "aop.file.ProtocolMessage.list_request": None,
    "aop.file.ProtocolMessage.mkdir_request": None,
    "aop.file.ProtocolMessage.result": None,
    **{
        f"aop.pty.ProtocolMessage.{case}": TERMINAL
        for case in (
            "open",
            "input",
            "output",
            "resize",
            "list",
            "sessions",
            "attach",
            "detach",
            "close",
            "state",
            "error",
            "opened",
            "attached",
            "detached",
            "kill",
            "closed",
        )
    },
}

APPLICATION_ENDPOINT = "/api/aop/application/ws"
NODE_ENDPOINT = "/api/aop/node/ws"
# What a WebSocket upgrade needs, per endpoint (the requests on it are checked one by one).
ENDPOINTS: Final[dict[str, Scope]] = {APPLICATION_ENDPOINT: READ, NODE_ENDPOINT: NODE}


def rpc_scope(path: str) -> Scope:
    """The scope the RPC ``<package>.<Service>/<Method>`` needs (admin for one not in the table)."""
    return RPC_METHODS.get(path, ADMIN)


def application_request_scope(namespace: str, case: str) -> Scope | None:
    """The scope the application request ``case`` of ``namespace`` needs; None when it is not a request.

    An unknown case of a known namespace (a newer client) needs ``admin``, so nothing passes
    unchecked; the hub then refuses it as unsupported for whoever may send it.
    """
    return APPLICATION_REQUESTS.get(f"{namespace}.{case}", ADMIN)
