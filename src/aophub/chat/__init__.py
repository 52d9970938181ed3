"""``aophub chat``: a terminal client for people (see :mod:`aophub.chat.app`)."""

from aophub.chat.command import add_chat_parser, run_chat

__all__ = ["add_chat_parser", "run_chat"]
