"""How the hub and its server (uvicorn) log: one handler on stderr, as text or as JSON lines.

:func:`logging_config` is a :func:`logging.config.dictConfig` dictionary for both the hub's
loggers (``aophub.*``, under the root logger) and uvicorn's (``uvicorn.error``,
``uvicorn.access``), so ``--log-level`` and ``--log-format`` apply to every line the process
logs. ``json`` writes one object per line for log collectors: ``time`` (UTC, ISO 8601),
``level``, ``logger``, ``message`` and, with a traceback, ``exception``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["LOG_FORMATS", "LOG_LEVELS", "JsonFormatter", "LogFormat", "logging_config"]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One log record as one line of JSON (newlines in the message are escaped, never written)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def logging_config(level: str = "info", log_format: LogFormat = "text") -> dict[str, Any]:
    """A dictConfig for the whole process: every logger through one stderr handler at ``level``."""
    formatter: dict[str, Any] = {"()": JsonFormatter} if log_format == "json" else {"format": TEXT_FORMAT}
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"hub": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "hub", "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level},
        # uvicorn's loggers log through the root handler (its own handlers would format differently).
        "loggers": {
            name: {"handlers": [], "level": level, "propagate": True}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
        },
    }
