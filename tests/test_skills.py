"""Skills: SKILL.md front matter, discovery in the workspace and the built-in folder, requirements,
enable/disable kept per node, the prompt section and its token bound, read_file of built-in skills,
and the /skills command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aophub.agent.audit import AuditLog
from aophub.agent.builtin import builtin_agent, builtin_commands
from aophub.agent.isolation import Isolation
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.skills import (
    BUILTIN_DIR,
    BUILTIN_PREFIX,
    FrontMatter,
    SkillCatalog,
    SkillError,
    SkillNotFound,
    parse_skill,
)
from aophub.agent.tokens import EstimatedTokens
from aophub.agent.tools import ToolBox
from aophub.config import ConfigStore, default_config
from aophub.node.commands import CommandFailed, CommandOutput

GOOD = """---
title: Release notes
description: Write release notes from the latest commits
requirements:
  commands: [sh]
  env: [HOME]
---
1. Run git log.
"""


def write_skill(root: Path, name: str, text: str) -> Path:
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def skill_text(description: str, *, commands: str = "[]", env: str = "[]", title: str = "A skill") -> str:
    return (
        f"---\ntitle: {title}\ndescription: {description}\n"
        f"requirements:\n  commands: {commands}\n  env: {env}\n---\nDo it.\n"
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "workspace"
    root.mkdir()
    return Workspace(root)


@pytest.fixture
def builtin(tmp_path: Path) -> Path:
    root = tmp_path / "builtin"
    write_skill(root, "greet", skill_text("Greet the user by name"))
    write_skill(root, "notes", skill_text("The built-in notes skill"))
    return root


def catalog_for(workspace: Workspace, builtin: Path, tmp_path: Path, **environ: str) -> SkillCatalog:
    return SkillCatalog(
        lambda: workspace,
        tmp_path / "data" / "skills.json",
        builtin_dir=builtin,
        command_path=lambda: os.environ["PATH"],
        environ={"HOME": "/home/someone", **environ},
    )


def test_front_matter_is_parsed_into_title_description_and_requirements() -> None:
    """A well-formed SKILL.md gives its front matter and the instructions after it."""
    front, body = parse_skill(GOOD)
    assert front == FrontMatter("Release notes", "Write release notes from the latest commits", ("sh",), ("HOME",))
    assert body == "1. Run git log.\n"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# no front matter\n", "must start with front matter"),
        ("---\ntitle: x\ndescription: y\n", "not closed"),
        ("---\ntitle: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a list\n---\n", "must be a mapping"),
        ("---\ndescription: y\n---\n", "'title' is required"),
        ("---\ntitle: x\ndescription: 3\n---\n", "'description' is required and must be text"),
        ("---\ntitle: x\ndescription: y\nrequirments: {}\n---\n", "unknown front matter key(s) 'requirments'"),
        ("---\ntitle: x\ndescription: y\nrequirements: [git]\n---\n", "'requirements' must be a mapping"),
        ("---\ntitle: x\ndescription: y\nrequirements: {programs: [git]}\n---\n", "unknown requirement(s)"),
        ("---\ntitle: x\ndescription: y\nrequirements: {commands: git}\n---\n", "must be a list of names"),
        ("---\ntitle: x\ndescription: y\nrequirements: {commands: ['rm -rf /']}\n---\n", "not a valid name"),
        ("---\ntitle: x\ndescription: y\nrequirements: {env: ['1X']}\n---\n", "not a valid name"),
        (f"---\ntitle: x\ndescription: {'y' * 201}\n---\n", "longer than 200 characters"),
    ],
)
def test_malformed_front_matter_is_a_clear_error(text: str, reason: str) -> None:
    """Each malformed front matter raises SkillError saying what is wrong."""
    with pytest.raises(SkillError, match=None) as raised:
        parse_skill(text)
    assert reason in str(raised.value)


def test_discovery_lists_workspace_and_builtin_skills_workspace_first(
    workspace: Workspace, builtin: Path, tmp_path: Path
) -> None:
    """Skills from both places, sorted; a workspace skill hides the built-in one of its name."""
    write_skill(workspace.root / "skills", "notes", skill_text("My own notes skill"))
    write_skill(workspace.root / "skills", "deploy", skill_text("Deploy the service"))
    skills = catalog_for(workspace, builtin, tmp_path).list()
    assert [(skill.name, skill.origin, skill.path) for skill in skills] == [
        ("deploy", "workspace", "skills/deploy/SKILL.md"),
        ("greet", "builtin", "builtin:skills/greet/SKILL.md"),
        ("notes", "workspace", "skills/notes/SKILL.md"),
    ]
    assert skills[2].description == "My own notes skill"
    assert all(skill.available and skill.enabled for skill in skills)


def test_a_skill_with_a_missing_requirement_is_unavailable_with_the_reason(
    workspace: Workspace, builtin: Path, tmp_path: Path
) -> None:
    """A missing command or environment variable makes the skill unavailable; present ones do not."""
    skills = workspace.root / "skills"
    write_skill(skills, "needs-tool", skill_text("x", commands="[sh, no-such-command-here]"))
    write_skill(skills, "needs-key", skill_text("x", env="[HOME, WEATHER_API_KEY]"))
    write_skill(skills, "has-all", skill_text("x", commands="[sh]", env="[HOME, WEATHER_API_KEY]"))
    catalog = catalog_for(workspace, builtin, tmp_path)
    assert catalog.get("needs-tool").problem == "command(s) not found on the PATH: no-such-command-here"
    assert catalog.get("needs-key").problem == "environment variable(s) not set: WEATHER_API_KEY"
    assert not catalog.get("has-all").available
    with_key = catalog_for(workspace, builtin, tmp_path, WEATHER_API_KEY="set")
    assert with_key.get("has-all").available
    assert with_key.get("needs-tool").available is False


def test_malformed_skills_are_listed_with_their_error_not_a_crash(
    workspace: Workspace, builtin: Path, tmp_path: Path
) -> None:
    """Bad front matter, a folder without SKILL.md, a bad folder name and a symlink out each get a reason."""
    skills = workspace.root / "skills"
    write_skill(skills, "broken", "---\ntitle: [oops\n---\n")
    (skills / "empty").mkdir()
    write_skill(skills, "Bad Name", skill_text("x"))
    (skills / "escape").mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text(skill_text("from outside"))
    (skills / "escape" / "SKILL.md").symlink_to(outside)
    write_skill(skills, "huge", skill_text("x") + "y" * 70_000)
    problems = {skill.name: skill.problem for skill in catalog_for(workspace, builtin, tmp_path).list()}
    assert problems["broken"].startswith("SKILL.md: the front matter is not valid YAML")
    assert problems["empty"] == "SKILL.md: 'skills/empty/SKILL.md' does not exist"
    assert problems["Bad Name"].startswith("the folder name is not a skill name")
    assert "outside the workspace" in problems["escape"]
    assert problems["huge"] == "SKILL.md: skills/huge/SKILL.md is larger than 65536 bytes"
    assert problems["greet"] == ""


def test_a_skill_dropped_into_the_workspace_is_found_without_a_restart(
    workspace: Workspace, builtin: Path, tmp_path: Path
) -> None:
    """Discovery runs on each call: the same catalog sees a new SKILL.md, and a removed one goes."""
    catalog = catalog_for(workspace, builtin, tmp_path)
    assert [skill.name for skill in catalog.list()] == ["greet", "notes"]
    path = write_skill(workspace.root / "skills", "fresh", skill_text("Just dropped in"))
    assert [skill.name for skill in catalog.list()] == ["fresh", "greet", "notes"]
    path.unlink()
    path.parent.rmdir()
    assert [skill.name for skill in catalog.list()] == ["greet", "notes"]


def test_enable_and_disable_are_kept_per_node_across_restarts(
    workspace: Workspace, builtin: Path, tmp_path: Path
) -> None:
    """disable writes skills.json (0600); a new catalog over it sees the skill disabled; enable undoes it."""
    catalog = catalog_for(workspace, builtin, tmp_path)
    assert not catalog.disable("greet").enabled
    assert catalog.disable("greet").enabled is False  # twice is harmless
    state = tmp_path / "data" / "skills.json"
    assert json.loads(state.read_text()) == {"disabled": ["greet"]}
    assert state.stat().st_mode & 0o777 == 0o600
    again = catalog_for(workspace, builtin, tmp_path)
    assert [(skill.name, skill.enabled) for skill in again.list()] == [("greet", False), ("notes", True)]
    assert again.enable("greet").enabled
    assert catalog.get("greet").enabled
    with pytest.raises(SkillNotFound, match="no skill is named 'nope'"):
        catalog.disable("nope")


def test_a_damaged_state_file_means_every_skill_enabled(workspace: Workspace, builtin: Path, tmp_path: Path) -> None:
    """A skills.json that is not JSON does not break the listing."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "skills.json").write_text("{not json")
    assert all(skill.enabled for skill in catalog_for(workspace, builtin, tmp_path).list())


def test_the_prompt_section_lists_enabled_available_skills_within_the_token_bound(
    workspace: Workspace, builtin: Path, tmp_path: Path
) -> None:
    """Disabled and unavailable skills stay out; past the bound the rest are counted, not listed."""
    skills = workspace.root / "skills"
    write_skill(skills, "missing", skill_text("x", commands="[no-such-command-here]"))
    catalog = catalog_for(workspace, builtin, tmp_path)
    catalog.disable("notes")
    count = EstimatedTokens().count
    section = catalog.prompt_section(1000, count)
    assert section.splitlines()[1:] == [
        "- greet: Greet the user by name (read_file path: builtin:skills/greet/SKILL.md)"
    ]
    for index in range(20):
        write_skill(skills, f"s{index:02}", skill_text(f"Skill number {index} does a thing"))
    bounded = catalog.prompt_section(150, count)
    assert count(bounded) <= 150 + count("- ... 99 more skill(s) not listed here")
    assert bounded.splitlines()[-1].endswith("more skill(s) not listed here")
    catalog.disable("greet")
    for index in range(20):
        catalog.disable(f"s{index:02}")
    assert catalog.prompt_section(1000, count) == ""


def test_the_shipped_skills_parse_and_their_requirements_are_met_here() -> None:
    """The two built-in skills are valid and name their commands (grep, git)."""
    names = sorted(path.name for path in BUILTIN_DIR.iterdir() if (path / "SKILL.md").is_file())
    assert names == ["find-todos", "git-recent-changes"]
    commands = {name: parse_skill((BUILTIN_DIR / name / "SKILL.md").read_text())[0].commands for name in names}
    assert commands == {"find-todos": ("grep",), "git-recent-changes": ("git",)}


async def test_read_file_reads_builtin_skills_confined_to_their_folder(workspace: Workspace, tmp_path: Path) -> None:
    """builtin:skills/<name>/SKILL.md reads the shipped file; '..' out of the folder is refused."""
    tools = ToolBox(
        workspace,
        ExecPolicy(isolation=Isolation(bubblewrap="/nonexistent")),
        AuditLog(tmp_path / "audit.jsonl"),
        read_only={BUILTIN_PREFIX: Workspace(BUILTIN_DIR)},
    )
    read = await tools.call("read_file", json.dumps({"path": "builtin:skills/find-todos/SKILL.md"}).encode())
    assert (read.is_error, read.text) == (False, (BUILTIN_DIR / "find-todos" / "SKILL.md").read_text())
    escape = await tools.call("read_file", json.dumps({"path": "builtin:skills/../skills.py"}).encode())
    assert escape.is_error
    assert "outside the workspace" in escape.text


async def run_skills(line: str, tmp_path: Path) -> CommandOutput:
    config = ConfigStore(tmp_path, environ={})
    commands = builtin_commands(builtin_agent(config))
    output = await commands.run("s1", line)
    assert isinstance(output, CommandOutput)
    return output


async def test_the_skills_command_lists_enables_and_disables(tmp_path: Path) -> None:
    """/skills lists (saying whether skills reach the prompt), enable/disable change it; bad use is refused."""
    config = default_config()
    config.agent.skills_enabled = True
    ConfigStore(tmp_path, environ={}).save(config)
    write_skill(tmp_path / "workspace" / "skills", "weather", skill_text("Weather", env="[NO_SUCH_VARIABLE_X]"))
    listed = (await run_skills("/skills", tmp_path)).text
    assert listed.splitlines()[0] == "Skills (enabled and available ones are in the system prompt):"
    assert "  enabled  find-todos (builtin): List the TODO, FIXME and XXX markers" in listed
    assert "  enabled  weather (workspace): Weather\n           unavailable: environment variable(s) not set" in listed
    assert (await run_skills("/skills disable find-todos", tmp_path)).text == "skill find-todos disabled"
    assert "  disabled find-todos (builtin)" in (await run_skills("/skills", tmp_path)).text
    assert (await run_skills("/skills enable weather", tmp_path)).text.startswith("skill weather enabled (unavailable:")
    with pytest.raises(CommandFailed, match="no skill is named 'nope'"):
        await run_skills("/skills enable nope", tmp_path)
    with pytest.raises(CommandFailed, match="usage: /skills"):
        await run_skills("/skills remove find-todos", tmp_path)
