"""Fixtures of the analysis tests: real data from tests/data and a results tree built from it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA, require_tools
from tests.analysis import results_tree


@pytest.fixture(scope="session")
def shared() -> Path:
    return SHARED_DATA


@pytest.fixture(scope="session")
def fixture_tree(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> results_tree.Tree:
    require_tools("tshark", "iperf3")
    return results_tree.build(tmp_path_factory.mktemp("results"), shared)


@pytest.fixture(scope="session")
def fixture_datasets(fixture_tree: results_tree.Tree):
    from analysis.datasets import Datasets
    from analysis.results import discover
    return Datasets.load(discover(fixture_tree.root))


@pytest.fixture(scope="session")
def fixture_report(tmp_path_factory: pytest.TempPathFactory, fixture_tree: results_tree.Tree,
                   fixture_datasets) -> Path:
    from analysis.report import build
    out = tmp_path_factory.mktemp("report")
    build(fixture_tree.root, out, datasets=fixture_datasets)
    return out


@pytest.fixture(scope="session")
def ran_fixture_tree(tmp_path_factory: pytest.TempPathFactory, shared: Path):
    """Results of the RAN experiments (ran-procedures, f1u) from the authors' real data (tests/analysis/ran_tree.py)."""
    from tests.analysis import ran_tree
    require_tools("tshark", "editcap")
    return ran_tree.build(tmp_path_factory.mktemp("ran-results"), shared)


@pytest.fixture(scope="session")
def ran_fixture_datasets(ran_fixture_tree):
    from analysis.datasets import Datasets
    from analysis.results import discover
    return Datasets.load(discover(ran_fixture_tree.root))


@pytest.fixture(scope="session")
def ran_fixture_report(tmp_path_factory: pytest.TempPathFactory, ran_fixture_tree, ran_fixture_datasets) -> Path:
    from analysis.report import build
    out = tmp_path_factory.mktemp("ran-report")
    build(ran_fixture_tree.root, out, datasets=ran_fixture_datasets)
    return out
