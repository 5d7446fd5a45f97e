"""Shared pytest fixtures and skip helpers.

A test that needs something absent skips with a reason naming what is missing; the same
test runs for real where that thing exists.
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from pathlib import Path

import pytest

# CI's split by privilege and its rule on skips (options --root-tests-out, --only-listed, --allowed-skips);
# which test files share an xdist worker (tests/scheduling.py)
pytest_plugins = ["tests.skip_policy", "tests.scheduling"]

ROOT = Path(__file__).resolve().parent.parent
# Real data from other testbeds, copied into the repository with its provenance (tests/data/README.md).
SHARED_DATA = ROOT / "tests" / "data"


# A plain user's PATH often lacks the sbin directories where Debian installs swanctl, nft, ip
# and iptables: look there too (the tests' own subprocesses included), so a tool that is installed
# is never reported as missing (the tests that need root still skip naming root).
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")
_path = os.environ.get("PATH", "").split(os.pathsep)
os.environ["PATH"] = os.pathsep.join([*_path, *(d for d in _SBIN if d not in _path and os.path.isdir(d))])


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces): run `sudo make test`")


def require_tools(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)}: `sudo make host-tools` installs them")


@pytest.fixture
def fresh_netns() -> Iterator[str]:
    """A new, empty network namespace (random name: parallel runs never meet), removed after."""
    require_root()
    require_tools("ip")
    name = f"tb-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.fixture
def shared_data() -> Path:
    """The real-data folder (tests/data): part of every clone, so never a reason to skip."""
    return SHARED_DATA


# Scripts and drivers that tests start call $PYTHON; without make (pytest run by hand from the
# venv) that is the interpreter running the tests, never a system python3 without the packages.
os.environ.setdefault("PYTHON", sys.executable)


def require_snort() -> Path:
    """The Snort 3 install tree ($SNORT_INSTALL: bin/snort, lib/libdaq.so; docs/secfn.md)."""
    path = os.environ.get("SNORT_INSTALL", "")
    if not path:
        pytest.skip("SNORT_INSTALL not set (a Snort 3 + libdaq install tree, built as images/snort/Dockerfile does)")
    if not (Path(path) / "bin" / "snort").is_file():
        pytest.skip(f"SNORT_INSTALL={path} has no bin/snort")
    return Path(path)


# --- kernel features --------------------------------------------------------------------------
# Tests that need a kernel feature some hosts lack carry `@pytest.mark.kernel("<feature>", ...)`:
# they skip where a feature is missing, naming it, and `make test-kernel` (pytest -m kernel) runs
# exactly them where the kernel has everything (the full-kernel guest: docs/vm-check.md). Each
# feature is probed for real, once per session, in a throw-away network namespace.
def _probe_gtp() -> tuple[bool, str]:
    return (True, "ok") if Path("/sys/module/gtp").is_dir() else (False, "no gtp module loaded (modprobe gtp)")


def _kernel_probes() -> dict[str, Callable[[], tuple[bool, str]]]:
    from ipsec import datapath as ipsec_datapath
    from macsec import datapath as macsec_datapath
    from testbed import datapath
    from wireguard import datapath as wg_datapath
    return {"xfrm-esp": ipsec_datapath.probe_xfrm_esp, "wireguard": wg_datapath.probe_kernel,
            "macsec": macsec_datapath.probe_kernel, "sctp": datapath.probe_sctp, "gtp": _probe_gtp}


KERNEL_FEATURES = ("xfrm-esp", "wireguard", "macsec", "sctp", "gtp")
_KERNEL_HAS: dict[str, tuple[bool, str]] = {}


def kernel_feature(feature: str) -> tuple[bool, str]:
    """(present, why not) for one of KERNEL_FEATURES, probed once per test session."""
    if feature not in KERNEL_FEATURES:
        raise ValueError(f"unknown kernel feature {feature!r}: one of {', '.join(KERNEL_FEATURES)}")
    if feature not in _KERNEL_HAS:
        _KERNEL_HAS[feature] = _kernel_probes()[feature]()
    return _KERNEL_HAS[feature]


def kernel_skip_reason(features: Iterable[str]) -> str | None:
    """The skip reason naming the first missing feature, or None where the kernel has them all."""
    for feature in features:
        ok, why = kernel_feature(feature)
        if not ok:
            return (f"kernel without {feature} ({why}): a kernel test, it runs where the kernel has it "
                    "(make test-kernel; the full-kernel guest, docs/vm-check.md)")
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kernel(*features): needs these kernel features (" + ", ".join(KERNEL_FEATURES)
                            + "); skips naming the first one missing; `make test-kernel` runs these tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for mark in item.iter_markers("kernel"):
            if not mark.args or any(f not in KERNEL_FEATURES for f in mark.args):
                raise pytest.UsageError(f"{item.nodeid}: kernel(...) takes features of {', '.join(KERNEL_FEATURES)}, "
                                        f"got {mark.args!r}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    features = [f for mark in item.iter_markers("kernel") for f in mark.args]
    if features:
        reason = kernel_skip_reason(features)
        if reason:
            pytest.skip(reason)


def kernel_param(value: object, *features: str, needs: bool = True) -> Any:
    """A parametrize value (a tuple for several names) that needs these kernel features (marked
    kernel(...)) where `needs`."""
    if not needs:
        return value
    return pytest.param(*(value if isinstance(value, tuple) else (value,)), marks=pytest.mark.kernel(*features))


def ipsec_param(value: object, profile_id: str, plane: str | None = None) -> Any:
    """A parametrize value running an IPsec profile: marked kernel("xfrm-esp") where the profile
    cannot run on strongSwan's userspace ESP (kernel-libipsec), e.g. AES-GMAC or the trap modes."""
    from ipsec import overlay as ipsec
    from testbed import profiles
    return kernel_param(value, "xfrm-esp", needs=not ipsec.libipsec_capable(profiles.get(profile_id, plane))[0])
