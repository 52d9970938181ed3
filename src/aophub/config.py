"""The hub's configuration: a YAML file in the data directory, validated, written atomically.

The file holds an ``aophub.v1.Config`` (LLM profiles with their keys, agent,
scan, sandbox and interaction settings) in its ProtoJSON shape, with
snake_case or camelCase field names. Missing settings take their defaults.
When the file names no LLM profile, ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` /
``AOPHUB_MODEL`` define one (profile id ``env``); with neither, the built-in
agent uses the offline ``echo`` model.

:class:`ConfigStore` is read by the running hub at each use, so an update
applies without a restart. Hand edits of the file apply too:
:meth:`ConfigStore.watch` polls the file and applies a changed one once it is
valid. When the hub rewrites the file (UpdateConfig), the user's comments and
key spelling are kept (round-trip YAML).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from google.protobuf import json_format
from google.protobuf.message import Message
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from aophub.v1 import config_pb2, interaction_pb2

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_POLL_INTERVAL",
    "ConfigError",
    "ConfigStore",
    "default_config",
    "profile_view",
    "validate",
]

log = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
# Seconds between two looks at the file for hand edits.
DEFAULT_POLL_INTERVAL = 1.0
HEADER = (
    "aophub configuration (aophub.v1.Config). Edit it by hand or with ConfigService.UpdateConfig:\n"
    "a saved edit applies to the running hub within seconds, and comments are kept."
)
ENV_PROFILE_ID = "env"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
_PROFILE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
# As aophub.hub.request_checks.MAX_ID_BYTES (a node id longer than that is refused at hello).
_MAX_NODE_ID_BYTES = 256

DEFAULT_SCAN_MODES = (
    config_pb2.ScanMode(
        name="review",
        description="Review the code at the target and report problems, most important first.",
        task_template=(
            "Review the code at {target}. Read the relevant files, then write a report in markdown: "
            "a short summary, then each problem with its file, why it matters and how to fix it."
        ),
    ),
    config_pb2.ScanMode(
        name="summary",
        description="Summarise what the target is and how it is organised.",
        task_template=(
            "Explore {target} and write a markdown summary of what it is, how it is organised and how to use it."
        ),
    ),
)


class ConfigError(Exception):
    """The configuration is invalid; ``violations`` names every bad field."""

    def __init__(self, violations: list[config_pb2.FieldViolation]) -> None:
        super().__init__("; ".join(f"{v.field}: {v.description}" if v.field else v.description for v in violations))
        self.violations = violations


def default_config() -> config_pb2.Config:
    """The configuration of a fresh hub: no LLM profile (echo), safe tool settings."""
    return config_pb2.Config(
        agent=config_pb2.AgentSettings(
            tools_enabled=True, ask_before_tools=True, max_turns=25, turn_timeout_seconds=600
        ),
        scans=config_pb2.ScanSettings(concurrency=3, timeout_seconds=600, modes=list(DEFAULT_SCAN_MODES)),
        sandbox=config_pb2.SandboxSettings(workspace="workspace", exec_timeout_seconds=60, output_cap_bytes=65536),
        interactions=config_pb2.InteractionSettings(
            timeout_seconds=600, expiry_policy=interaction_pb2.EXPIRY_POLICY_DENY
        ),
    )


Violations = list[config_pb2.FieldViolation]


def _violation(field: str, description: str) -> config_pb2.FieldViolation:
    return config_pb2.FieldViolation(field=field, description=description)


def _profile_problems(config: config_pb2.Config) -> Violations:
    problems: Violations = []
    seen: set[str] = set()
    for index, profile in enumerate(config.profiles):
        where = f"profiles[{index}]"
        if not _PROFILE_ID.match(profile.id):
            problems.append(
                _violation(f"{where}.id", "must be 1-63 lowercase letters, digits, '-' or '_', starting with one")
            )
        elif profile.id in seen:
            problems.append(_violation(f"{where}.id", f"duplicate profile id {profile.id!r}"))
        seen.add(profile.id)
        if profile.provider == config_pb2.PROVIDER_KIND_UNSPECIFIED:
            problems.append(
                _violation(f"{where}.provider", "must be PROVIDER_KIND_OPENAI_COMPATIBLE or PROVIDER_KIND_ECHO")
            )
        if profile.provider == config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE:
            url = urlsplit(profile.base_url)
            if url.scheme not in ("http", "https") or not url.netloc:
                problems.append(
                    _violation(f"{where}.base_url", "must be an http(s) URL such as https://api.openai.com/v1")
                )
            if not profile.model:
                problems.append(_violation(f"{where}.model", "is required for an OpenAI-compatible profile"))
        if profile.timeout_seconds > 3600:
            problems.append(_violation(f"{where}.timeout_seconds", "must be at most 3600"))
    if config.active_profile_id and config.active_profile_id not in seen:
        problems.append(_violation("active_profile_id", f"names no profile ({config.active_profile_id!r})"))
    return problems


def _scan_problems(config: config_pb2.Config) -> Violations:
    problems: Violations = []
    if config.scans.concurrency > 64:
        problems.append(_violation("scans.concurrency", "must be at most 64"))
    modes: set[str] = set()
    for index, mode in enumerate(config.scans.modes):
        if not mode.name:
            problems.append(_violation(f"scans.modes[{index}].name", "is required"))
        elif mode.name in modes:
            problems.append(_violation(f"scans.modes[{index}].name", f"duplicate mode {mode.name!r}"))
        modes.add(mode.name)
        if "{target}" not in mode.task_template:
            problems.append(_violation(f"scans.modes[{index}].task_template", "must contain {target}"))
    return problems


# agent.subagent_on_parent_cancel: what a canceled parent turn does to its subagents (aophub.hub.subagents).
SUBAGENT_PARENT_CANCEL_POLICIES = ("keep", "cancel")
MAX_SUBAGENT_CONCURRENCY = 32


def _subagent_problems(config: config_pb2.Config) -> Violations:
    problems: Violations = []
    if config.agent.subagent_concurrency > MAX_SUBAGENT_CONCURRENCY:
        problems.append(_violation("agent.subagent_concurrency", f"must be at most {MAX_SUBAGENT_CONCURRENCY}"))
    policy = config.agent.subagent_on_parent_cancel
    if policy and policy not in SUBAGENT_PARENT_CANCEL_POLICIES:
        problems.append(
            _violation(
                "agent.subagent_on_parent_cancel", f"must be one of {', '.join(SUBAGENT_PARENT_CANCEL_POLICIES)}"
            )
        )
    return problems


def _sandbox_problems(config: config_pb2.Config) -> Violations:
    problems: Violations = []
    for field in ("deny_patterns", "allow_patterns"):
        for index, pattern in enumerate(getattr(config.sandbox, field)):
            try:
                re.compile(pattern)
            except re.error as error:
                problems.append(_violation(f"sandbox.{field}[{index}]", f"is not a valid regular expression: {error}"))
    if ".." in Path(config.sandbox.workspace).parts:
        problems.append(_violation("sandbox.workspace", "must not contain '..'"))
    return problems


def _llm_push_problems(config: config_pb2.Config) -> Violations:
    """The push list's entries are node ids: non-empty, at most 256 UTF-8 bytes (as ids are), each once."""
    problems: Violations = []
    seen: set[str] = set()
    for index, node_id in enumerate(config.llm_push.node_ids):
        where = f"llm_push.node_ids[{index}]"
        if not node_id:
            problems.append(_violation(where, "must be a node id, not empty"))
        elif len(node_id.encode()) > _MAX_NODE_ID_BYTES:
            problems.append(_violation(where, f"must be at most {_MAX_NODE_ID_BYTES} bytes, as node ids are"))
        elif node_id in seen:
            problems.append(_violation(where, f"duplicate node id {node_id!r}"))
        seen.add(node_id)
    return problems


# The dialect bridges this hub has (bridges.md 1.1); config.yaml's bridges.enabled names some of them.
BRIDGE_NAMES = frozenset({"agent-cli", "zclaw"})


def _bridge_problems(config: config_pb2.Config) -> Violations:
    """``bridges.enabled`` names known bridges, each once."""
    problems: Violations = []
    seen: set[str] = set()
    for index, name in enumerate(config.bridges.enabled):
        where = f"bridges.enabled[{index}]"
        if name not in BRIDGE_NAMES:
            problems.append(
                _violation(where, f"unknown bridge {name!r} (available: {', '.join(sorted(BRIDGE_NAMES))})")
            )
        elif name in seen:
            problems.append(_violation(where, f"duplicate bridge {name!r}"))
        seen.add(name)
    return problems


def validate(config: config_pb2.Config) -> Violations:
    """Every invalid field of ``config``, with what is wrong with it."""
    problems = (
        _profile_problems(config)
        + _scan_problems(config)
        + _subagent_problems(config)
        + _sandbox_problems(config)
        + _llm_push_problems(config)
        + _bridge_problems(config)
    )
    if config.agent.max_turns > 1000:
        problems.append(_violation("agent.max_turns", "must be at most 1000"))
    return problems


def profile_view(profile: config_pb2.LlmProfile) -> config_pb2.LlmProfileView:
    """The profile as shown to clients: everything but the key."""
    return config_pb2.LlmProfileView(
        id=profile.id,
        name=profile.name,
        provider=profile.provider,
        base_url=profile.base_url,
        api_key_configured=bool(profile.api_key),
        model=profile.model,
        max_tokens=profile.max_tokens,
        context_window=profile.context_window,
        timeout_seconds=profile.timeout_seconds,
        images=profile.images,
    )


def _merge_defaults(config: config_pb2.Config) -> config_pb2.Config:
    merged = default_config()
    for name in ("agent", "scans", "sandbox", "interactions"):
        if config.HasField(name):
            getattr(merged, name).MergeFrom(getattr(config, name))
            if name == "scans" and config.scans.modes:
                del merged.scans.modes[:]
                merged.scans.modes.extend(config.scans.modes)
    merged.profiles.extend(config.profiles)
    merged.active_profile_id = config.active_profile_id
    merged.llm_push.CopyFrom(config.llm_push)
    merged.bridges.CopyFrom(config.bridges)
    return merged


def _env_profile(environ: Mapping[str, str]) -> config_pb2.LlmProfile | None:
    key, base_url = environ.get("OPENAI_API_KEY", ""), environ.get("OPENAI_BASE_URL", "")
    if not key and not base_url:
        return None
    return config_pb2.LlmProfile(
        id=ENV_PROFILE_ID,
        name="From the environment",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=base_url or DEFAULT_OPENAI_BASE_URL,
        api_key=key,
        model=environ.get("AOPHUB_MODEL", DEFAULT_OPENAI_MODEL),
        timeout_seconds=120,
    )


_M = TypeVar("_M", bound=Message)


def _copy(message: _M) -> _M:
    copied = type(message)()
    copied.CopyFrom(message)
    return copied


def _contents(path: Path) -> bytes | None:
    """The file's bytes, or None when there is no file. (The bytes, not its mtime and size, tell one
    version from the next: two same-sized writes within one tick of the file system's clock look alike.)"""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigError([_violation("", f"cannot read {path.name}: {error}")]) from None


def _round_trip_yaml() -> YAML:
    """YAML 1.2 that keeps comments, key order and spelling; lists indented under their key, long
    strings (prompts, templates) on one line."""
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def _parse(contents: bytes | None, where: Path) -> tuple[config_pb2.Config, int]:
    """The configuration and revision of the file's ``contents`` (None: no file, the empty configuration);
    raises ConfigError naming what is wrong."""
    if contents is None:
        return config_pb2.Config(), 0
    try:
        raw = YAML(typ="safe", pure=True).load(contents.decode())
    except UnicodeDecodeError as error:
        raise ConfigError([_violation("", f"{where.name} is not UTF-8 text: {error}")]) from None
    except YAMLError as error:
        raise ConfigError([_violation("", f"{where.name} is not valid YAML: {error}")]) from None
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError([_violation("", f"{where.name} must hold a mapping")])
    revision = raw.pop("revision", 0) or 0
    if not isinstance(revision, int) or revision < 0:
        raise ConfigError([_violation("revision", "must be a whole number")])
    stored = config_pb2.Config()
    try:
        json_format.ParseDict(raw, stored)
    except json_format.ParseError as error:
        raise ConfigError([_violation("", str(error))]) from None
    problems = validate(_merge_defaults(stored))
    if problems:
        raise ConfigError(problems)
    return stored, revision


def _field_name(key: object) -> object:
    """A key of the file as a proto field name (ProtoJSON's camelCase spelling names the same field)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key) if isinstance(key, str) else key


def _identity(item: object) -> object:
    """What a list item is known by across a rewrite: a profile's id, a scan mode's name."""
    if isinstance(item, Mapping):
        names = {_field_name(key): value for key, value in item.items()}
        return names.get("id") or names.get("name")
    return None


def _rewritten(old: object, new: object) -> object:
    """``new`` (plain data) built into ``old`` (the file's round-trip tree), so that the comments and the
    key spelling of every setting that remains are kept."""
    if isinstance(old, CommentedMap) and isinstance(new, dict):
        keys = {_field_name(key): key for key in old}
        for name, key in keys.items():
            if name not in new:
                del old[key]
        for name, value in new.items():
            key = keys.get(name, name)
            old[key] = _rewritten(old[key], value) if key in old else value
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list):
        # A profile (or scan mode) keeps its own comments wherever it moves; other items go by position.
        known = {_identity(item): item for item in old if _identity(item) is not None}
        items = []
        for index, value in enumerate(new):
            identity = _identity(value)
            if identity is not None:
                items.append(_rewritten(known.get(identity), value))
            else:
                items.append(_rewritten(old[index] if index < len(old) else None, value))
        del old[len(items) :]
        for index, item in enumerate(items):
            if index < len(old):
                old[index] = item
            else:
                old.append(item)
        return old
    return new


class ConfigStore:
    """The configuration file of one data directory, with the revision of the last change.

    The file is the truth: :meth:`save` rewrites it, and :meth:`reload_if_changed` (polled by
    :meth:`watch`) applies what someone else wrote to it.
    """

    def __init__(
        self, data_dir: Path, *, environ: Mapping[str, str] = os.environ, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = data_dir / CONFIG_FILE
        self.data_dir = data_dir
        self._environ = environ
        self._clock = clock
        self._stored = config_pb2.Config()
        self._effective: config_pb2.Config | None = None  # computed from _stored when first needed
        self.revision = 0
        self.updated_at = 0.0
        # The contents of the file last applied (or refused), and other contents seen since, waiting
        # to hold still (a missing file is None, so "nothing waiting" needs its own flag).
        self._seen: bytes | None = None
        self._changing: tuple[bytes | None] | None = None
        self.load()

    def __repr__(self) -> str:
        return f"<ConfigStore {self.path} revision={self.revision}>"

    def load(self) -> None:
        """(Re)read the file; a missing file is an empty configuration. Raises ConfigError if invalid."""
        contents = _contents(self.path)
        stored, revision = _parse(contents, self.path)
        if contents is not None:
            self.updated_at = self.path.stat().st_mtime
        self.revision = revision
        self._apply(stored)
        self._seen, self._changing = contents, None

    def _apply(self, stored: config_pb2.Config) -> None:
        self._stored = stored
        self._effective = None

    def reload_if_changed(self, *, at_once: bool = False) -> bool:
        """Apply a change someone else made to the file (a hand edit); True when the settings changed.

        The file is read at each call; new contents are applied once they have held still from one
        call to the next (unless ``at_once``), so a file caught half-written by an editor is not
        applied. A file that does not parse or validate is logged once and the last good
        configuration stays. A removed file means the defaults, as at start. An edit that changes no
        setting (a comment) changes nothing. Each applied change increments the revision.
        """
        try:
            contents = _contents(self.path)
        except ConfigError as error:
            log.warning("%s cannot be checked for changes: %s", self.path, error)
            return False
        if contents == self._seen:
            self._changing = None
            return False
        if self._changing != (contents,) and not at_once:
            self._changing = (contents,)
            return False
        self._seen, self._changing = contents, None
        try:
            stored, revision = _parse(contents, self.path)
        except ConfigError as error:
            log.warning("%s is not applied, the last good configuration stays: %s", self.path, error)
            return False
        if stored == self._stored:
            return False
        self.revision = max(revision, self.revision + 1)
        self.updated_at = self._clock()
        self._apply(stored)
        log.info("%s changed on disk: applied as revision %d", self.path, self.revision)
        return True

    async def watch(
        self, on_change: Callable[[], Awaitable[None]] | None = None, *, interval: float = DEFAULT_POLL_INTERVAL
    ) -> None:
        """Apply hand edits until cancelled: :meth:`reload_if_changed` every ``interval`` seconds, then
        ``on_change`` after each applied change (a failure is logged and the watch goes on)."""
        while True:
            await asyncio.sleep(interval)
            try:
                if self.reload_if_changed() and on_change is not None:
                    await on_change()
            except Exception:
                log.exception("applying the changed %s failed", self.path)

    @property
    def config(self) -> config_pb2.Config:
        """The effective configuration (a copy): the file over the defaults, plus the environment's profile."""
        config = config_pb2.Config()
        config.CopyFrom(self._effective_config())
        return config

    def _effective_config(self) -> config_pb2.Config:
        # Computed once per change of the file: the built-in agent asks for it on every turn.
        if self._effective is None:
            config = _merge_defaults(self._stored)
            if not config.profiles:
                env = _env_profile(self._environ)
                if env is not None:
                    config.profiles.append(env)
                    config.active_profile_id = config.active_profile_id or env.id
            self._effective = config
        return self._effective

    @property
    def stored(self) -> config_pb2.Config:
        """What the file holds (a copy): no defaults filled in, no profile from the environment."""
        return _copy(self._stored)

    def active_profile(self) -> config_pb2.LlmProfile | None:
        """The active LLM profile (a copy), or ``None`` for the offline echo model."""
        config = self._effective_config()
        for profile in config.profiles:
            if profile.id == config.active_profile_id and profile.provider != config_pb2.PROVIDER_KIND_ECHO:
                return _copy(profile)
        return None

    def llm_push_node_ids(self) -> frozenset[str]:
        """The node ids the file lists to receive the active LLM profile (AOP-nodes 9.6.6)."""
        return frozenset(self._effective_config().llm_push.node_ids)

    def bridge_names(self) -> frozenset[str]:
        """The dialect bridges the file enables (bridges.md 1.1), besides ``--bridge``."""
        return frozenset(self._effective_config().bridges.enabled)

    def agent_settings(self) -> config_pb2.AgentSettings:
        return _copy(self._effective_config().agent)

    def sandbox_settings(self) -> config_pb2.SandboxSettings:
        return _copy(self._effective_config().sandbox)

    def workspace(self) -> Path:
        """The sandbox workspace directory (created if missing)."""
        path = Path(self.config.sandbox.workspace or "workspace")
        path = path if path.is_absolute() else self.data_dir / path
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _rewrite(self, document: dict[str, Any]) -> str:
        """The file's new text: ``document`` built into the current file, keeping its comments."""
        yaml = _round_trip_yaml()
        tree: object = None
        try:
            tree = yaml.load(self.path.read_text()) if self.path.exists() else None
        except (OSError, UnicodeDecodeError, YAMLError) as error:
            log.warning("%s cannot be read, so it is rewritten without its comments: %s", self.path, error)
        if not isinstance(tree, CommentedMap):
            tree = CommentedMap()
            tree.yaml_set_start_comment(HEADER)
        out = io.StringIO()
        yaml.dump(_rewritten(tree, document), out)
        return out.getvalue()

    def save(self, config: config_pb2.Config) -> None:
        """Validate ``config`` and write it atomically (temp file, fsync, rename); raises ConfigError.

        The user's comments, key order and key spelling in the file are kept for every setting
        that remains.
        """
        problems = validate(_merge_defaults(config))
        if problems:
            raise ConfigError(problems)
        document = json_format.MessageToDict(config, preserving_proto_field_name=True)
        document["revision"] = self.revision + 1
        text = self._rewrite(document)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".config-", suffix=".yaml", dir=self.data_dir)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, 0o600)
            with _old_version(self.path) as old:
                os.replace(temp, self.path)
                _empty_if_still_linked(old)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        self._seen, self._changing = text.encode(), None
        self._apply(_copy(config))
        self.revision += 1
        self.updated_at = self._clock()


@contextlib.contextmanager
def _old_version(path: Path) -> Iterator[int | None]:
    """An open descriptor on the file at ``path`` before it is replaced (None when there is none)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _empty_if_still_linked(fd: int | None) -> None:
    """Empty a replaced configuration that another name still links to.

    A hard link made to the file (by a command the agent ran, say) would otherwise keep the old
    settings, API keys included, readable after every rewrite.
    """
    if fd is not None and os.fstat(fd).st_nlink > 0:
        os.ftruncate(fd, 0)
