"""What a scenario measured, and how it is written out (JSON and a markdown table).

A :class:`Figure` holds one quantity measured on the hub and, usually, on the baseline, once per
repeat; the reported value is the median of the repeats and the ratio is aophub / baseline of
the medians. A :class:`Target` from the issue is checked against the figure; the targets are
reported, never tuned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bench.stats import median

__all__ = [
    "Figure",
    "ScenarioResult",
    "Target",
    "absolute_below",
    "ratio_at_least",
    "render_markdown",
    "result_json",
]

Status = Literal["ok", "skipped", "failed"]


@dataclass(frozen=True)
class Target:
    """A target from the issue: its text, and how to check a figure against it."""

    text: str
    check: Callable[[Figure], bool | None]


def ratio_at_least(fraction: float) -> Target:
    """aophub's median must be at least ``fraction`` of the baseline's."""
    return Target(f">= {fraction:.0%} of baseline", lambda figure: _compare(figure.ratio, ">=", fraction))


def absolute_below(limit: float, unit: str) -> Target:
    """aophub's median must be below ``limit`` (in the figure's unit)."""
    return Target(f"< {limit:g} {unit}", lambda figure: _compare(figure.aophub, "<", limit))


def _compare(value: float | None, op: str, limit: float) -> bool | None:
    if value is None or math.isnan(value):
        return None
    return value >= limit if op == ">=" else value < limit


@dataclass
class Figure:
    """One quantity, measured once per repeat on aophub and (unless ``None``) on the baseline."""

    name: str
    unit: str
    aophub_runs: list[float]
    baseline_runs: list[float] | None = None
    target: Target | None = None
    # Set when the target is not a function of the medians (e.g. "receives every event").
    met_override: bool | None = None
    note: str = ""
    # Decimal places shown in the table (None: chosen from the magnitude).
    decimals: int | None = None

    @property
    def aophub(self) -> float:
        return median(self.aophub_runs)

    @property
    def baseline(self) -> float | None:
        return None if self.baseline_runs is None else median(self.baseline_runs)

    @property
    def ratio(self) -> float | None:
        baseline = self.baseline
        if baseline is None or not baseline or math.isnan(baseline) or math.isnan(self.aophub):
            return None
        return self.aophub / baseline

    @property
    def met(self) -> bool | None:
        if self.met_override is not None:
            return self.met_override
        return None if self.target is None else self.target.check(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "aophub": _finite(self.aophub),
            "aophub_runs": [_finite(value) for value in self.aophub_runs],
            "baseline": _finite(self.baseline),
            "baseline_runs": None if self.baseline_runs is None else [_finite(v) for v in self.baseline_runs],
            "ratio": _finite(self.ratio),
            "target": None if self.target is None else self.target.text,
            "met": self.met,
            "note": self.note,
        }


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


@dataclass
class ScenarioResult:
    """A scenario's figures, settings and outcome ("skipped" and "failed" carry a reason)."""

    key: str
    title: str
    baseline: str
    status: Status = "ok"
    reason: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    # What the figures say together, computed from them in the run: e.g. what stands in the way of
    # a target not met (rendered after the table).
    findings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "baseline": self.baseline,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 1),
            "settings": self.settings,
            "figures": [figure.to_json() for figure in self.figures],
            "findings": self.findings,
        }


def result_json(machine: Mapping[str, Any], options: Mapping[str, Any], results: Sequence[ScenarioResult]) -> Any:
    """The whole run as one JSON-ready document."""
    return {"machine": dict(machine), "options": dict(options), "scenarios": [r.to_json() for r in results]}


def format_value(value: float | None, unit: str, decimals: int | None = None) -> str:
    """A number for the table: thousands separators for rates, two decimals for small values."""
    if value is None or math.isnan(value):
        return "-"
    if decimals is None:
        decimals = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{decimals}f} {unit}"


def _met(figure: Figure) -> str:
    met = figure.met
    if figure.target is None:
        return ""
    return "?" if met is None else "yes" if met else "**NO**"


def _load(machine: Mapping[str, Any], when: str) -> str:
    loads = machine.get(f"load_average_at_{when}")
    return f"{loads[0]:.2f}" if loads else "?"


def _share(machine: Mapping[str, Any], when: str) -> str:
    shares = machine.get(f"cpu_share_at_{when}")
    return f"{shares['server']:.0%} / {shares['client']:.0%}" if shares else "?"


def render_markdown(machine: Mapping[str, Any], options: Mapping[str, Any], results: Sequence[ScenarioResult]) -> str:
    """The markdown report: machine, then one table row per figure, then notes and skips."""
    lines = [
        "# aophub benchmark",
        "",
        f"{machine.get('date', '')}: {machine.get('cpu_model', '?')}, {machine.get('cpus', '?')} CPUs"
        f" (server on CPU {options.get('server_cpus', '-')}, load generator on CPU {options.get('client_cpus', '-')}),"
        f" Python {machine.get('python', '?')}, SQLite {machine.get('sqlite', '?')}, {machine.get('platform', '')}",
        "",
        f"Medians of {options.get('repeats')} runs; ratio = aophub / baseline."
        f" Load average (1 min) {_load(machine, 'start')} at the start, {_load(machine, 'end')} at the end;"
        f" share of a CPU a busy loop got (server CPU / load generator CPU): {_share(machine, 'start')} at the"
        f" start, {_share(machine, 'end')} at the end. Other work on the machine shows up in every figure;"
        " the ratios suffer least."
        + (" QUICK smoke run: sizes are tiny, figures are not meaningful." if options.get("quick") else ""),
        "",
        "| scenario | figure | aophub | baseline | ratio | target | met? |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    notes: list[str] = []
    for result in results:
        if result.status != "ok":
            lines.append(f"| {result.key} | {result.status}: {result.reason} | | | | | |")
            continue
        for figure in result.figures:
            ratio = figure.ratio
            lines.append(
                f"| {result.key} | {figure.name} | {format_value(figure.aophub, figure.unit, figure.decimals)}"
                f" | {format_value(figure.baseline, figure.unit, figure.decimals)}"
                f" | {'-' if ratio is None else f'{ratio:.2f}x'}"
                f" | {figure.target.text if figure.target else ''} | {_met(figure)} |"
            )
            if figure.note:
                notes.append(f"- {result.key} {figure.name}: {figure.note}")
    lines += ["", "Baselines:"]
    lines += [f"- {r.key} ({r.title}): {r.baseline}" for r in results]
    if notes:
        lines += ["", "Notes:", *notes]
    findings = [f"- {result.key}: {finding}" for result in results for finding in result.findings]
    if findings:
        lines += ["", "Findings:", *findings]
    return "\n".join(lines) + "\n"
