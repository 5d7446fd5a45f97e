"""CI's split of the suite by privilege and its rule on skips (.ci/run; issue 30).

Every test runs once in CI: first the whole suite as an unprivileged user, where a test that needs
root skips saying so (`require_root()` in tests/conftest.py: a reason starting with "needs root");
`--root-tests-out FILE` writes those tests' node ids. Then the root run runs exactly them
(`--only-listed FILE`). So the split is derived from what the tests themselves say, with no list
to keep: a test that needs root without saying so fails in the user run.

`--allowed-skips FILE` (.ci/allowed-skips.yaml) fails the session when a test skips for a reason
none of the file's patterns matches: a skip CI is meant to avoid (a package its setup installs, a
tool it prepares) is a failure there, not a silent gap. With `--root-tests-out`, a root skip is
allowed too (the root run runs it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT_REASON = "needs root"


@dataclass(frozen=True)
class Allowed:
    name: str
    pattern: re.Pattern[str]
    why: str


def load_allowed(path: Path) -> list[Allowed]:
    """The allow-list: a YAML list of {name, match (a regular expression searched in the skip
    reason), why}; a malformed entry is an error naming it."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or []
    except (OSError, yaml.YAMLError) as e:
        raise pytest.UsageError(f"--allowed-skips {path}: {e}") from None
    if not isinstance(data, list):
        raise pytest.UsageError(f"{path}: expected a list of {{name, match, why}}")
    out = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or set(entry) != {"name", "match", "why"} \
                or not all(isinstance(v, str) and v.strip() for v in entry.values()):
            raise pytest.UsageError(f"{path}: entry {i + 1} needs exactly name, match and why (non-empty strings)")
        try:
            out.append(Allowed(entry["name"], re.compile(entry["match"]), entry["why"]))
        except re.error as e:
            raise pytest.UsageError(f"{path}: entry {entry['name']!r}: bad pattern: {e}") from None
    return out


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def is_root_skip(reason: str) -> bool:
    return reason.startswith(ROOT_REASON)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("g5tb-ci", "CI's split by privilege and skip rule (tests/skip_policy.py)")
    group.addoption("--root-tests-out", metavar="FILE", default=None,
                    help="write the node ids of the tests that skipped for want of root to FILE")
    group.addoption("--only-listed", metavar="FILE", default=None,
                    help="run only the tests (or modules) whose node ids FILE lists, one a line")
    group.addoption("--allowed-skips", metavar="FILE", default=None,
                    help="fail when a test skips for a reason no pattern of FILE (YAML) matches")


class SkipPolicy:
    """Collects the skips (in the controller when xdist runs the tests) and judges them at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.root_out = config.getoption("root_tests_out")
        self.allowed_path = config.getoption("allowed_skips")
        self.allowed = load_allowed(Path(self.allowed_path)) if self.allowed_path else None
        self.skips: dict[str, str] = {}
        self.violations: list[tuple[str, str]] = []

    def record(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if report.skipped:
            self.skips.setdefault(report.nodeid, skip_reason(report))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.record(report)

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self.record(report)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        root = sorted(n for n, r in self.skips.items() if is_root_skip(r))
        if self.root_out:
            Path(self.root_out).write_text("".join(f"{n}\n" for n in root), encoding="utf-8")
        if self.allowed is None:
            return
        for nodeid, reason in sorted(self.skips.items()):
            if self.root_out and is_root_skip(reason):
                continue
            if not any(a.pattern.search(reason) for a in self.allowed):
                self.violations.append((nodeid, reason))
        if self.violations and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.root_out:
            n = sum(1 for r in self.skips.values() if is_root_skip(r))
            terminalreporter.write_line(f"skip policy: {n} tests need root, listed in {self.root_out}")
        if self.violations:
            terminalreporter.section("skips CI does not allow (tests/skip_policy.py)", red=True)
            for nodeid, reason in self.violations:
                terminalreporter.write_line(f"{nodeid}: {reason}")
            terminalreporter.write_line(f"{len(self.violations)} skipped for a reason no entry of "
                                        f"{self.allowed_path} matches: install what they name in CI's "
                                        "setup, or add an entry with its reason", red=True)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):     # an xdist worker: its reports reach the controller
        return
    if config.getoption("root_tests_out") or config.getoption("allowed_skips"):
        config.pluginmanager.register(SkipPolicy(config), "g5tb-skip-policy")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("only_listed")
    if not path:
        return
    listed = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = set(listed)

    def chosen(nodeid: str) -> bool:
        # a listed module (a collection-time skip) selects every test in it
        return nodeid in wanted or nodeid.split("::", 1)[0] in wanted

    present = {i.nodeid for i in items} | {i.nodeid.split("::", 1)[0] for i in items}
    unknown = [n for n in listed if n not in present]
    if unknown:
        raise pytest.UsageError(f"--only-listed {path}: {len(unknown)} node ids are not in this suite "
                                f"(renamed? collected differently?): {', '.join(unknown[:5])}")
    keep = [i for i in items if chosen(i.nodeid)]
    config.hook.pytest_deselected(items=[i for i in items if not chosen(i.nodeid)])
    items[:] = keep
