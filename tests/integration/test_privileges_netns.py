"""The capabilities of nf-configs/privileges.yaml are enough, for real: the very entrypoints
the containers run (ipsec/entrypoint.sh, wireguard/entrypoint.sh, compose/entrypoints/upf.sh,
holder.sh) in network namespaces as root holding exactly their role's capabilities, as
Docker gives them with `cap_drop: [ALL]` + `cap_add` + `no-new-privileges` (setpriv sets the
bounding and inheritable sets and no_new_privs; root then holds the bounding set). Each is
also run with one capability fewer and must fail, so the table lists nothing it could drop
without noticing. The rendered overlay dirs are handed to another user first (0700/0600, as
when `make render` ran as a normal user): root needs DAC_READ_SEARCH to read them."""
from __future__ import annotations

import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testbed import keys, netns, privileges
from tests.conftest import ROOT, require_root, require_tools
from tests.integration.test_stack_upf_entrypoint import UPF_SH, upf_stub_env

pytestmark = pytest.mark.netns


def setpriv_argv(caps: list[str]) -> list[str]:
    bounding = ",".join(["-all"] + [f"+{c.lower()}" for c in caps])
    return ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", f"--bounding-set={bounding}", "--no-new-privs"]


def role_caps(name: str) -> list[str]:
    return sorted(privileges.role(name).capabilities)


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_root()
    require_tools("setpriv", "openssl", "wg", "ip", "nft", "swanctl", "unshare", "nsenter", "ping")
    if not Path("/dev/net/tun").exists():
        pytest.skip("no /dev/net/tun on this host")
    return keys.ensure(tmp_path_factory.getbasetemp() / "privileges-keys-state")


@pytest.fixture
def lab_with_caps(keys_dir: Path, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str, list[str]], netns.Lab]]:
    labs: list[netns.Lab] = []

    render = netns.Lab._render

    def foreign_render(self: netns.Lab) -> dict[str, Path]:
        dirs = render(self)
        for d in dirs.values():
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(d)], check=True)
        return dirs

    def make(protocol_profile: str, plane: str, caps: list[str]) -> netns.Lab:
        # the lab's wrapper mounts the private /run (the container's tmpfs), then the entrypoint
        # runs with only `caps`, as in its holder container
        wrapper = ('mount -t tmpfs -o mode=0755 tmpfs /run && exec '
                   + " ".join(setpriv_argv(caps)) + ' -- "$0" "$@"')
        monkeypatch.setattr(netns, "PRIVATE_RUN_WRAPPER", wrapper)
        monkeypatch.setattr(netns.Lab, "_render", foreign_render)
        lab = netns.Lab(f"priv-{secrets.token_hex(3)}", plane, protocol_profile, nodes=["gnb", "upf"],
                        state_dir=tmp_path / f"state-{len(labs)}", keys_dir=keys_dir)
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        lab.down()


def _ping(lab: netns.Lab) -> None:
    res = lab.exec("gnb", ["ping", "-c", "2", "-i", "0.2", "-W", "2", lab.address("upf")])
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("profile,role", [("aes256gcm", "holder-ipsec"), ("wireguard", "holder-wireguard")])
def test_overlay_entrypoints_need_exactly_their_roles_capabilities(
        lab_with_caps: Callable[[str, str, list[str]], netns.Lab], profile: str, role: str) -> None:
    caps = role_caps(role)
    lab = lab_with_caps(profile, "n3", caps)
    lab.up(timeout=60)
    _ping(lab)
    # the entrypoints really run without the rest (their CapBnd)
    for pid in lab.pids.values():
        bnd = _cap_bounding(pid)
        assert bnd is not None and bnd == _caps_mask(caps), f"pid {pid}: CapBnd {bnd:#x}"
    lab.down()
    for missing in caps:                  # and each one is needed
        short = lab_with_caps(profile, "n3", [c for c in caps if c != missing])
        with pytest.raises(netns.LabError):
            short.up(timeout=15)
        short.down()


def _cap_bounding(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("CapBnd:"):
                return int(line.split()[1], 16)
    except OSError:
        return None
    return None


NOBODY = 65534
CAP_NUMBERS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "SETGID": 6, "SETUID": 7,
               "NET_BIND_SERVICE": 10, "NET_ADMIN": 12, "NET_RAW": 13}


def _caps_mask(caps: list[str]) -> int:
    return sum(1 << CAP_NUMBERS[c] for c in caps)


def test_upf_entrypoint_runs_with_the_upf_role(fresh_netns: str, tmp_path: Path) -> None:
    require_tools("setpriv", "nft")
    if not Path("/dev/net/tun").exists():
        pytest.skip("no /dev/net/tun on this host")
    netns = fresh_netns
    env, cfg = upf_stub_env(tmp_path, "exit 0")

    def run(caps: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", netns, *setpriv_argv(caps), "--", "bash", str(UPF_SH),
                               str(cfg)], env=env, capture_output=True, text=True, timeout=60, check=False)

    assert run([]).returncode != 0, "the UPF entrypoint cannot work without NET_ADMIN"
    res = run(role_caps("upf"))
    assert res.returncode == 0, res.stderr
    addr = subprocess.run(["ip", "netns", "exec", netns, "ip", "-4", "-o", "addr", "show", "dev", env["OGSTUN"]],
                          capture_output=True, text=True, check=True).stdout
    assert env["UE_GATEWAY_CIDR"] in addr


def test_holder_runs_without_any_capability(fresh_netns: str) -> None:
    """The baseline holder (role holder: no capability) gets ready on its tmpfs and idles."""
    holder = ROOT / "compose" / "entrypoints" / "holder.sh"
    script = ("mount -t tmpfs -o mode=0755 tmpfs /run && mkdir /run/testbed && "
              f"({' '.join(setpriv_argv(role_caps('holder')))} -- bash {holder} & pid=$!; "
              "for _ in $(seq 50); do [ -f /run/testbed/overlay-ready ] && break; sleep 0.1; done; "
              "ls /run/testbed; grep CapBnd /proc/$pid/status; kill $pid; wait $pid)")
    require_tools("setpriv", "unshare")
    res = subprocess.run(["ip", "netns", "exec", fresh_netns, "unshare", "--mount", "--propagation", "private",
                          "sh", "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert res.returncode == 0, res.stderr
    assert "overlay-ready" in res.stdout and "CapBnd:\t0000000000000000" in res.stdout, res.stdout + res.stderr
