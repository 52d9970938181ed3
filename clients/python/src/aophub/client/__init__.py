"""The Python client of an aophub hub: the application WebSocket and the management services.

Start with :class:`HubClient` (``await HubClient.connect(url, token)``); docs/quickstart-python.md
walks through a first turn and resuming it.
"""

from aophub.client.errors import Code, HubClientError, HubUnavailableError
from aophub.client.hub_client import DEFAULT_REQUEST_TIMEOUT, HubClient
from aophub.client.management import Management
from aophub.client.messages import (
    DEFAULT_MAX_FRAME_BYTES,
    application_url,
    approve,
    base_url,
    client_tool_output,
    interaction_of,
    pack,
    text_of,
    user_text,
)
from aophub.client.terminal import Terminal, TerminalOutput
from aophub.client.watch import Watcher, WatchItem
from aophub.client.workspace import ExecOutput, ExecRun

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_REQUEST_TIMEOUT",
    "Code",
    "ExecOutput",
    "ExecRun",
    "HubClient",
    "HubClientError",
    "HubUnavailableError",
    "Management",
    "Terminal",
    "TerminalOutput",
    "WatchItem",
    "Watcher",
    "application_url",
    "approve",
    "base_url",
    "client_tool_output",
    "interaction_of",
    "pack",
    "text_of",
    "user_text",
]
