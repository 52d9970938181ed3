"""Skills: procedures the built-in agent can follow, each a folder with a ``SKILL.md``.

A skill is ``<workspace>/skills/<name>/SKILL.md`` or ``<name>/SKILL.md`` in the folder shipped in
the package (:data:`BUILTIN_DIR`); a workspace skill hides a built-in one of the same name. The
file starts with YAML front matter between two ``---`` lines, then the instructions::

    ---
    title: Find TODO markers
    description: List the TODO and FIXME markers in the workspace, grouped by file
    requirements:
      commands: [grep]      # must be on the PATH exec commands get
      env: []               # must be set in the node's environment
    ---
    1. Run ...

``title`` and ``description`` are required one-line strings; ``requirements`` is optional. Any
other key is an error, so a misspelt key is reported rather than ignored. A skill whose front
matter is malformed, or whose requirements are missing, is listed with the reason and is
*unavailable*. Every skill is enabled unless disabled; the disabled names are kept per node in
``skills.json`` in the data directory. Discovery runs on each call (each turn, each ``/skills``),
so a ``SKILL.md`` dropped into the workspace counts from the next turn, without a restart.

The system prompt lists the enabled, available skills, one line each with the path the model
gives ``read_file`` to read the whole file before it follows it (:meth:`SkillCatalog.prompt_section`);
built-in skills have paths under :data:`BUILTIN_PREFIX`, which ``read_file`` reads from
:data:`BUILTIN_DIR` (see :class:`aophub.agent.tools.ToolBox`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from aophub.agent.sandbox import SandboxError, Workspace

__all__ = [
    "BUILTIN_DIR",
    "BUILTIN_PREFIX",
    "DEFAULT_PROMPT_TOKENS",
    "MAX_SKILL_BYTES",
    "SKILLS_STATE_FILE",
    "FrontMatter",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillNotFound",
    "listing",
    "parse_skill",
]

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS = "skills"
BUILTIN_DIR = Path(__file__).with_name("builtin_skills")
# read_file reads paths starting with this from BUILTIN_DIR.
BUILTIN_PREFIX = "builtin:skills/"
SKILLS_STATE_FILE = "skills.json"
MAX_SKILL_BYTES = 64 * 1024
# Skill folders looked at in each place; more are ignored (and said so by list()).
MAX_SKILLS = 200
DEFAULT_PROMPT_TOKENS = 1000
# A title or description longer than this is refused (they are one-liners for the prompt).
MAX_LINE_CHARACTERS = 200
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_COMMAND = re.compile(r"^[A-Za-z0-9._+-]{1,64}$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_KEYS = {"title", "description", "requirements"}
_REQUIREMENT_KEYS = {"commands", "env"}


class SkillError(Exception):
    """A SKILL.md that cannot be used: no front matter, bad YAML, a missing or unknown key. Its text says why."""


class SkillNotFound(Exception):
    """No skill has the name asked for."""


@dataclass(frozen=True)
class FrontMatter:
    """What a SKILL.md's front matter says."""

    title: str
    description: str
    commands: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skill:
    """One discovered skill. ``problem`` is why it is unavailable ("" when available)."""

    name: str
    # "workspace" or "builtin".
    origin: str
    # The path read_file takes: "skills/<name>/SKILL.md" or "builtin:skills/<name>/SKILL.md".
    path: str
    title: str = ""
    description: str = ""
    commands: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    enabled: bool = True
    problem: str = ""

    @property
    def available(self) -> bool:
        return not self.problem

    @property
    def in_prompt(self) -> bool:
        return self.enabled and self.available


def _strings(value: object, where: str, pattern: re.Pattern[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SkillError(f"{where} must be a list of names")
    for item in value:
        if not pattern.match(item):
            raise SkillError(f"{where}: {item!r} is not a valid name")
    return tuple(value)


def _line(front: dict[object, object], key: str) -> str:
    value = front.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SkillError(f"'{key}' is required and must be text")
    value = " ".join(value.split())
    if len(value) > MAX_LINE_CHARACTERS:
        raise SkillError(f"'{key}' is longer than {MAX_LINE_CHARACTERS} characters")
    return value


def parse_skill(text: str) -> tuple[FrontMatter, str]:
    """Split a SKILL.md into its front matter and its instructions. Raises SkillError saying what is wrong."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError("SKILL.md must start with front matter: a line '---', the YAML, then a line '---'")
    end = next((index for index, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise SkillError("the front matter is not closed by a line '---'")
    try:
        front = YAML(typ="safe", pure=True).load("".join(lines[1:end]))
    except YAMLError as error:
        raise SkillError(f"the front matter is not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(front, dict):
        raise SkillError("the front matter must be a mapping with 'title' and 'description'")
    unknown = sorted(map(str, set(front) - _KEYS))
    if unknown:
        raise SkillError(
            f"unknown front matter key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(_KEYS))}"
        )
    requirements = front.get("requirements") or {}
    if not isinstance(requirements, dict):
        raise SkillError("'requirements' must be a mapping with 'commands' and/or 'env'")
    unknown = sorted(map(str, set(requirements) - _REQUIREMENT_KEYS))
    if unknown:
        raise SkillError(f"unknown requirement(s) {', '.join(map(repr, unknown))}; known: commands, env")
    parsed = FrontMatter(
        title=_line(front, "title"),
        description=_line(front, "description"),
        commands=_strings(requirements.get("commands"), "requirements.commands", _COMMAND),
        env=_strings(requirements.get("env"), "requirements.env", _VARIABLE),
    )
    return parsed, "".join(lines[end + 1 :])


def read_skill_file(workspace: Workspace, relative: str) -> str:
    """The text of ``relative`` in ``workspace`` (confined as the file tools are), at most MAX_SKILL_BYTES.

    Raises SkillError (too big, not a regular UTF-8 file) and SandboxError / OSError."""
    fd, info = workspace.open_file(workspace.resolve(relative, must_exist=True))
    try:
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{relative} is not a regular file")
        data = os.read(fd, MAX_SKILL_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillError(f"{relative} is larger than {MAX_SKILL_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{relative} is not UTF-8 text") from None


class SkillCatalog:
    """The skills of one node: discovered in ``workspace()``'s ``skills/`` and in ``builtin_dir``.

    ``state_path`` holds the disabled names. ``command_path()`` is the PATH a skill's commands are
    looked up on (the one exec commands get); ``environ`` is checked for its variables. Safe to
    share between threads; the disk is read on each call.
    """

    def __init__(
        self,
        workspace: Callable[[], Workspace],
        state_path: Path,
        *,
        builtin_dir: Path = BUILTIN_DIR,
        command_path: Callable[[], str] = lambda: os.environ.get("PATH", os.defpath),
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self._workspace = workspace
        self.state_path = state_path
        self._builtin = Workspace(builtin_dir) if builtin_dir.is_dir() else None
        self._command_path = command_path
        self._environ = environ
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<SkillCatalog {self.state_path.name}>"

    def list(self) -> list[Skill]:
        """Every skill, sorted by name: the workspace's, then the built-in ones it does not hide."""
        disabled = self._disabled()
        found: dict[str, Skill] = {}
        places = [(self._workspace(), WORKSPACE_SKILLS, "workspace", f"{WORKSPACE_SKILLS}/")]
        if self._builtin is not None:
            places.append((self._builtin, ".", "builtin", BUILTIN_PREFIX))
        for workspace, folder, origin, prefix in places:
            for name in _folders(workspace, folder):
                if name not in found:
                    relative = f"{folder}/{name}/{SKILL_FILE}" if folder != "." else f"{name}/{SKILL_FILE}"
                    skill = self._load(workspace, relative, name, origin, f"{prefix}{name}/{SKILL_FILE}")
                    found[name] = replace(skill, enabled=name not in disabled)
        return [found[name] for name in sorted(found)]

    def get(self, name: str) -> Skill:
        """The skill ``name``; raises SkillNotFound."""
        for skill in self.list():
            if skill.name == name:
                return skill
        raise SkillNotFound(f"no skill is named {name!r} (see /skills)")

    def text(self, name: str) -> str:
        """The whole SKILL.md of ``name`` ("" when it cannot be read); raises SkillNotFound."""
        skill = self.get(name)
        workspace, relative = (
            (self._builtin, skill.path.removeprefix(BUILTIN_PREFIX))
            if skill.origin == "builtin"
            else (self._workspace(), skill.path)
        )
        assert workspace is not None
        try:
            return read_skill_file(workspace, relative)
        except (SkillError, SandboxError, OSError):
            return ""

    def enable(self, name: str) -> Skill:
        """Enable ``name`` (kept across restarts); raises SkillNotFound."""
        return self._set(name, enabled=True)

    def disable(self, name: str) -> Skill:
        """Disable ``name``: it leaves the system prompt (kept across restarts); raises SkillNotFound."""
        return self._set(name, enabled=False)

    def prompt_section(self, max_tokens: int, count: Callable[[str], int]) -> str:
        """The system prompt's skills section: one line per enabled, available skill, within ``max_tokens``
        (as ``count`` counts them); "" when there is none. Skills past the bound are named as a number."""
        skills = [skill for skill in self.list() if skill.in_prompt]
        if not skills:
            return ""
        lines = [
            "Skills (procedures you can follow). Before you use one, read its whole file with read_file "
            "at the path given, then follow its instructions:"
        ]
        used = count(lines[0])
        for listed, skill in enumerate(skills):
            line = f"- {skill.name}: {skill.description} (read_file path: {skill.path})"
            cost = count(line) + 1
            if used + cost > max_tokens:
                lines.append(f"- ... {len(skills) - listed} more skill(s) not listed here")
                break
            lines.append(line)
            used += cost
        return "\n".join(lines) if len(lines) > 1 else ""

    def _set(self, name: str, *, enabled: bool) -> Skill:
        skill = self.get(name)
        with self._lock:
            disabled = self._disabled()
            if enabled:
                disabled.discard(name)
            else:
                disabled.add(name)
            _write_state(self.state_path, disabled)
        return replace(skill, enabled=enabled)

    def _disabled(self) -> set[str]:
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return set()
        except ValueError:
            return set()  # a damaged file: every skill enabled, as on a fresh node; the next change rewrites it
        names = state.get("disabled") if isinstance(state, dict) else None
        return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()

    def _load(self, workspace: Workspace, relative: str, name: str, origin: str, path: str) -> Skill:
        skill = Skill(name, origin, path)
        if not _NAME.match(name):
            return replace(skill, problem="the folder name is not a skill name (a-z, 0-9, '.', '_', '-'; 64 at most)")
        try:
            front, _ = parse_skill(read_skill_file(workspace, relative))
        except FileNotFoundError:
            return replace(skill, problem=f"no {SKILL_FILE} in the folder")
        except (SkillError, SandboxError) as error:
            return replace(skill, problem=f"{SKILL_FILE}: {error}")
        except OSError as error:
            return replace(skill, problem=f"{SKILL_FILE} cannot be read: {error.strerror or error}")
        skill = replace(skill, title=front.title, description=front.description, commands=front.commands, env=front.env)
        return replace(skill, problem=self._missing(front))

    def _missing(self, front: FrontMatter) -> str:
        search = self._command_path()
        commands = [command for command in front.commands if shutil.which(command, path=search) is None]
        variables = [variable for variable in front.env if not self._environ.get(variable)]
        reasons = []
        if commands:
            reasons.append(f"command(s) not found on the PATH: {', '.join(commands)}")
        if variables:
            reasons.append(f"environment variable(s) not set: {', '.join(variables)}")
        return "; ".join(reasons)


def listing(skills: list[Skill], *, prompt_on: bool) -> str:
    """What ``/skills`` shows: whether skills reach the prompt, then one line per skill with its state."""
    if prompt_on:
        lines = ["Skills (enabled and available ones are in the system prompt):"]
    else:
        lines = ["Skills (none are in the system prompt: agent.skills_enabled is off):"]
    if not skills:
        lines.append(f"  none: add one as {WORKSPACE_SKILLS}/<name>/{SKILL_FILE} in the workspace")
    for skill in skills:
        state = "enabled " if skill.enabled else "disabled"
        lines.append(f"  {state} {skill.name} ({skill.origin}): {skill.description or skill.title or '-'}")
        if skill.problem:
            lines.append(f"           unavailable: {skill.problem}")
    lines.append("/skills enable NAME, /skills disable NAME")
    return "\n".join(lines)


def _folders(workspace: Workspace, folder: str) -> list[str]:
    """The folder names under ``folder``, sorted, at most MAX_SKILLS (none when it does not exist)."""
    try:
        directory = workspace.resolve(folder, must_exist=True)
        names = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir(follow_symlinks=False))
    except (SandboxError, OSError):
        return []
    return [name for name in names if not name.startswith(".")][:MAX_SKILLS]


def _write_state(path: Path, disabled: set[str]) -> None:
    """Write the disabled names atomically (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump({"disabled": sorted(disabled)}, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
