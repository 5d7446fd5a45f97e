"""testbed/ran/oai/libconfig.py: what the writer emits is what libconfig (the C library OAI links)
reads, and the checker's reader agrees with that library on every rendered OAI file."""
from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

from testbed.ran.oai import libconfig
from tests.testbed.render.helpers import render_to

# A tiny program on the real libconfig: every scalar setting as "path<TAB>type<TAB>value".
DUMP_C = r"""
#include <libconfig.h>
#include <stdio.h>
static void walk(config_setting_t *s, const char *path) {
  char p[1024];
  for (int i = 0; i < config_setting_length(s); i++) {
    config_setting_t *e = config_setting_get_elem(s, i);
    const char *n = config_setting_name(e);
    if (n) snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", n);
    else snprintf(p, sizeof p, "%s[%d]", path, i);
    switch (config_setting_type(e)) {
      case CONFIG_TYPE_GROUP: case CONFIG_TYPE_LIST: case CONFIG_TYPE_ARRAY: walk(e, p); break;
      case CONFIG_TYPE_INT: printf("%s\tint\t%d\n", p, config_setting_get_int(e)); break;
      case CONFIG_TYPE_INT64: printf("%s\tint64\t%lld\n", p, config_setting_get_int64(e)); break;
      case CONFIG_TYPE_FLOAT: printf("%s\tfloat\t%.6f\n", p, config_setting_get_float(e)); break;
      case CONFIG_TYPE_STRING: printf("%s\tstring\t%s\n", p, config_setting_get_string(e)); break;
      case CONFIG_TYPE_BOOL: printf("%s\tbool\t%d\n", p, config_setting_get_bool(e)); break;
    }
  }
}
int main(int argc, char **argv) {
  config_t c; config_init(&c);
  if (!config_read_file(&c, argv[1])) {
    fprintf(stderr, "%s:%d: %s\n", argv[1], config_error_line(&c), config_error_text(&c));
    return 1;
  }
  walk(config_root_setting(&c), "");
  return 0;
}
"""


@lru_cache(maxsize=1)
def _dumper(build_dir: str) -> Path:
    src = Path(build_dir) / "dump.c"
    src.write_text(DUMP_C)
    exe = Path(build_dir) / "libconfig-dump"
    res = subprocess.run(["gcc", "-o", str(exe), str(src), "-lconfig"], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        pytest.skip(f"cannot build against libconfig (install libconfig-dev): {res.stderr.strip()[:200]}")
    return exe


@pytest.fixture(scope="module")
def dumper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("missing gcc: run `make setup`")
    return _dumper(str(tmp_path_factory.mktemp("libconfig")))


def _flatten(data: object, path: str = "") -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _flatten(v, f"{path}.{k}" if path else k)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _flatten(v, f"{path}[{i}]")
    elif isinstance(data, bool):
        out.append((path, "bool", str(int(data))))
    elif isinstance(data, libconfig.Int64):
        out.append((path, "int64", str(int(data))))
    elif isinstance(data, int):
        out.append((path, "int", str(data)))
    elif isinstance(data, float):
        out.append((path, "float", f"{data:.6f}"))
    else:
        out.append((path, "string", str(data)))
    return out


def _c_view(dumper: Path, path: Path) -> list[tuple[str, str, str]]:
    res = subprocess.run([str(dumper), str(path)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return [tuple(line.split("\t", 2)) for line in res.stdout.splitlines()]  # type: ignore[misc]


def test_round_trip_of_every_value_kind() -> None:
    data = {"a": 1, "big": 5_000_000_000, "cell": libconfig.Int64(12345678), "neg": -96, "f": 0.5,
            "s": 'quote " and \\ back', "yes": True, "ints": [78, 0], "strs": ["nea0", "nia2"], "empty": [],
            "grp": {"x": {"y": "z"}}, "lst": [{"k": 1}, {"k": 2}]}
    text = libconfig.dumps(data, "header line")
    assert text.startswith("# header line\n")
    assert "cell = 12345678L;" in text and "big = 5000000000L;" in text and "ints = [ 78, 0 ];" in text
    back = libconfig.loads(text)
    assert back == data
    assert isinstance(back["cell"], libconfig.Int64) and not isinstance(back["a"], libconfig.Int64)


def test_reader_takes_oai_style_text() -> None:
    text = """// comment
    Active_gNBs = ( "gNB-OAI");   # trailing
    gNBs = ( { gNB_ID = 0xe00; nr_cellid = 12345678L; plmn_list = ({ mcc = 208; mnc = 99; mnc_length = 2; }); } );
    RUs = ( { local_rf = "yes"
              nb_tx = 1
              bands = [78]; } );
    /* block */ rfsimulator: { serveraddr = "server"; options = (); }
    msg = "a" "b";
    """
    d = libconfig.loads(text)
    assert d["gNBs"][0]["gNB_ID"] == 0xE00 and d["gNBs"][0]["nr_cellid"] == 12345678
    assert d["RUs"][0] == {"local_rf": "yes", "nb_tx": 1, "bands": [78]}
    assert d["rfsimulator"] == {"serveraddr": "server", "options": []} and d["msg"] == "ab"


@pytest.mark.parametrize("text,where", [("a = ;", "line 1"), ("a = 1;\nb = {", "end of file"),
                                        ("a = 1;\na = 2;", "duplicate"), ("= 3;", "setting name")])
def test_reader_rejects_malformed_text(text: str, where: str) -> None:
    with pytest.raises(libconfig.LibconfigError, match=where):
        libconfig.loads(text)


def test_writer_refuses_what_libconfig_cannot_hold() -> None:
    with pytest.raises(ValueError, match="not valid"):
        libconfig.dumps({"bad name": 1})
    with pytest.raises(TypeError):
        libconfig.dumps({"a": None})


@pytest.mark.parametrize("ran", ["oai", "split"])
def test_rendered_oai_files_read_the_same_in_c_libconfig_and_in_the_checker(ran: str, tmp_path: Path,
                                                                            dumper: Path) -> None:
    r = render_to("baseline", "n3", tmp_path / "r", ran=ran)
    confs = sorted((r.dir / "oai").glob("*.conf"))
    assert len(confs) == (3 if ran == "oai" else 5)
    for conf in confs:
        assert _c_view(dumper, conf) == _flatten(libconfig.loads(conf.read_text())), conf.name
