"""Terminals for tests: run as the test's user, but with the test's directory as home.

An interactive shell reads the user's start-up files (``~/.bashrc``); a test that closes its
terminal while those still run (a version manager rehashing, say) can leave their locks behind and
hold up every later shell of the machine. With the test's own directory as ``HOME`` the shells read
none.
"""

from __future__ import annotations

import os
from pathlib import Path

from aophub.node.terminals import Launch, plain_launch


def own_home_launch(directory: Path) -> Launch:
    """:func:`~aophub.node.terminals.plain_launch` in ``directory``, with ``HOME`` set to it."""
    return plain_launch(directory, env={**os.environ, "HOME": str(directory)})
