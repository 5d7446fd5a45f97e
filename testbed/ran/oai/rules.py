"""`make check-config` for the OpenAirInterface RAN (RAN=oai|split): the rendered libconfig files
mounted into the CU-CP, CU-UP, DU, monolithic gNB and nrUE containers, read back as OAI reads them.

Checked against the merged Compose model and nf-configs/stack.yaml, every finding naming file and key:
- roles: CU-CP `tr_s_preference "f1"` + `E1_INTERFACE.type "cp"` without gNB_CU_UP_ID, CU-UP type
  "up" run by nr-cuup, DU `MACRLCs.tr_n_preference "f1"`, monolithic gNB "local_RRC";
- addresses: N2 (AMF, the CU-CP's/gNB's own), N3 (the CU-UP's/gNB's own), F1-C (DU -> CU-CP),
  F1-U (DU <-> CU-UP, each on its own f1u address), E1 (CU-UP -> CU-CP), the nrUE's RF simulator
  server (the DU or gNB on `ran`): each must be that service's address on that network; with a
  DTLS relay on N2, F1-C or E1 the client's side uses the relay's local listener instead, and
  the server side's relay connects to the server NF's address (Checker.relay);
- ports: E1 SCTP (e1ap_port), F1-U GTP-U (gtpu_port), the RF simulator's (oai.rfsim_port), as stack.yaml;
- identities: one gNB_ID across CU-CP, CU-UP, DU; the same NR cell id on CU-CP and DU;
- PLMN, TAC, S-NSSAI of every gNB-side file and the nrUE's DNN / slice against stack.yaml; the
  nrUE's IMSI, K and OPc against the provisioned subscribers.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.ran.oai import libconfig

if TYPE_CHECKING:
    from testbed.check.rules import Checker


def load(c: Checker, svc: str, path: Path) -> None:
    """Read one mounted .conf into c.configs under oai:<role> (a syntax finding if it is not libconfig)."""
    try:
        data = libconfig.loads(path.read_text(encoding="utf-8"))
    except (OSError, libconfig.LibconfigError) as exc:
        c.add(path, "(file)", f"cannot parse as libconfig: {exc}", "syntax")
        return
    role = classify(data)
    if role:
        c.configs.setdefault(f"oai:{role}", []).append((svc, path, data))


def classify(data: dict[str, Any]) -> str | None:
    if isinstance(data.get("uicc0"), dict):
        return "ue"
    gnbs = data.get("gNBs")
    if not isinstance(gnbs, list) or not gnbs:
        return None
    g = gnbs[0]
    e1 = (g.get("E1_INTERFACE") or [{}])[0]
    if e1.get("type") == "cp":
        return "cucp"
    if e1.get("type") == "up":
        return "cuup"
    macrlc = (data.get("MACRLCs") or [{}])[0]
    if macrlc.get("tr_n_preference") == "f1":
        return "du"
    if macrlc.get("tr_n_preference") == "local_RRC":
        return "gnb"
    return None


def _first(c: Checker, role: str) -> tuple[str, Path, dict[str, Any]] | None:
    entries = c.configs.get(f"oai:{role}") or []
    return entries[0] if entries else None


def _svc(c: Checker, role: str) -> str | None:
    e = _first(c, role)
    return e[0] if e else None


def _port(c: Checker, path: Path, key: str, got: Any, want: Any, what: str) -> None:
    if want is None:
        return
    if got is None or int(got) != int(want):
        c.add(path, key, f"{what} {got} differs from stack.yaml: {want}", "address")


def _program(c: Checker, svc: str) -> list[str]:
    cmd = c.model.services.get(svc, {}).get("command") or []
    return [str(x) for x in cmd] if isinstance(cmd, list) else str(cmd).split()


def check(c: Checker) -> None:
    oai = c.values.get("oai") or {}
    amf = c.runner("open5gs:amf") or ("amf" if "amf" in c.model.services else None)
    cucp, du = _svc(c, "cucp"), _svc(c, "du")
    for svc, path, d in c.configs.get("oai:cucp", []):
        g = d["gNBs"][0]
        if g.get("tr_s_preference") != "f1":
            c.add(path, "gNBs[0].tr_s_preference", f"{g.get('tr_s_preference')!r}: a CU-CP must be \"f1\"", "role")
        if "gNB_CU_UP_ID" in g:
            c.add(path, "gNBs[0].gNB_CU_UP_ID", "a CU-CP must not carry gNB_CU_UP_ID (OAI refuses it)", "role")
        c.expect(path, "gNBs[0].local_s_address", g.get("local_s_address"), svc, "f1c", "CU-CP F1-C address")
        _ng(c, svc, path, g, amf)
        e1 = g["E1_INTERFACE"][0]
        c.expect(path, "gNBs[0].E1_INTERFACE[0].ipv4_cucp", e1.get("ipv4_cucp"), svc, "e1", "CU-CP E1 address")
        _port(c, path, "gNBs[0].E1_INTERFACE[0].port_cucp", e1.get("port_cucp"), c.values.get("e1ap_port"), "E1 SCTP port")
        _program_is(c, svc, path, "nr-softmodem")
    for svc, path, d in c.configs.get("oai:cuup", []):
        g = d["gNBs"][0]
        e1 = g["E1_INTERFACE"][0]
        relay = c.relay("e1")
        _peer(c, path, "gNBs[0].E1_INTERFACE[0].ipv4_cucp", e1.get("ipv4_cucp"), relay, cucp, "e1", "CU-CP E1 address")
        _peer(c, path, "gNBs[0].E1_INTERFACE[0].ipv4_cuup", e1.get("ipv4_cuup"), relay, svc, "e1", "CU-UP E1 address")
        c.expect(path, "gNBs[0].local_s_address", g.get("local_s_address"), svc, "f1u", "CU-UP F1-U address")
        c.expect(path, "gNBs[0].remote_s_address", g.get("remote_s_address"), du, "f1u", "DU F1-U address")
        _port(c, path, "gNBs[0].local_s_portd", g.get("local_s_portd"), c.values.get("gtpu_port"), "F1-U GTP-U port")
        _port(c, path, "gNBs[0].remote_s_portd", g.get("remote_s_portd"), c.values.get("gtpu_port"), "F1-U GTP-U port")
        ni = g.get("NETWORK_INTERFACES") or {}
        c.expect(path, "gNBs[0].NETWORK_INTERFACES.GNB_IPV4_ADDRESS_FOR_NGU", ni.get("GNB_IPV4_ADDRESS_FOR_NGU"),
                 svc, "n3", "CU-UP N3 address")
        _program_is(c, svc, path, "nr-cuup")
    for svc, path, d in c.configs.get("oai:du", []):
        m = d["MACRLCs"][0]
        relay = c.relay("f1c")
        _peer(c, path, "MACRLCs[0].local_n_address", m.get("local_n_address"), relay, svc, "f1c", "DU F1-C address")
        c.expect(path, "MACRLCs[0].local_n_address_f1u", m.get("local_n_address_f1u"), svc, "f1u", "DU F1-U address")
        _peer(c, path, "MACRLCs[0].remote_n_address", m.get("remote_n_address"), relay, cucp, "f1c", "CU-CP F1-C address")
        _port(c, path, "MACRLCs[0].local_n_portd", m.get("local_n_portd"), c.values.get("gtpu_port"), "F1-U GTP-U port")
        _port(c, path, "MACRLCs[0].remote_n_portd", m.get("remote_n_portd"), c.values.get("gtpu_port"), "F1-U GTP-U port")
        _radio(c, path, d, oai)
        _program_is(c, svc, path, "nr-softmodem")
    for svc, path, d in c.configs.get("oai:gnb", []):
        _ng(c, svc, path, d["gNBs"][0], amf)
        ni = d["gNBs"][0].get("NETWORK_INTERFACES") or {}
        c.expect(path, "gNBs[0].NETWORK_INTERFACES.GNB_IPV4_ADDRESS_FOR_NGU", ni.get("GNB_IPV4_ADDRESS_FOR_NGU"),
                 svc, "n3", "gNB N3 address")
        _radio(c, path, d, oai)
        _program_is(c, svc, path, "nr-softmodem")
    _identities(c)
    _plmn(c)
    _ues(c, oai)


def _program_is(c: Checker, svc: str, path: Path, program: str) -> None:
    cmd = _program(c, svc)
    if program not in cmd:
        c.add(c.svc_file(svc, "command"), f"services.{svc}.command",
              f"runs {' '.join(cmd) or '(nothing)'}, but {path.name} is a config for {program}", "role")


def _ng(c: Checker, svc: str, path: Path, g: dict[str, Any], amf: str | None) -> None:
    relay = c.relay("n2")
    for i, a in enumerate(g.get("amf_ip_address") or []):
        _peer(c, path, f"gNBs[0].amf_ip_address[{i}].ipv4", a.get("ipv4"), relay, amf, "n2", "AMF address")
    ni = g.get("NETWORK_INTERFACES") or {}
    _peer(c, path, "gNBs[0].NETWORK_INTERFACES.GNB_IPV4_ADDRESS_FOR_NG_AMF",
          ni.get("GNB_IPV4_ADDRESS_FOR_NG_AMF"), relay, svc, "n2", "own N2 address")


def _peer(c: Checker, path: Path, key: str, value: Any, relay: Any, svc: str | None, net: str, what: str) -> None:
    """An address of the client's side of a link: `svc`'s on `net`, or, with a relay overlay (dtls)
    on the plane, the relay's local listener (both the NF's own and its peer's address)."""
    if relay is None:
        c.expect(path, key, value, svc, net, what)
    elif str(value) != relay.listen:
        c.add(path, key, f"{value}: with the {net.upper()} relay ({what}) the NF must use the relay's listener "
              f"{relay.listen} (nf-configs/stack.yaml relay_links.{net})", "address")


def _radio(c: Checker, path: Path, d: dict[str, Any], oai: dict[str, Any]) -> None:
    rf = d.get("rfsimulator") or {}
    _port(c, path, "rfsimulator.serverport", rf.get("serverport"), oai.get("rfsim_port"), "RF simulator port")
    if rf.get("serveraddr") != "server":
        c.add(path, "rfsimulator.serveraddr", f"{rf.get('serveraddr')!r}: the DU / gNB must be the RF simulator "
              "\"server\" the nrUEs connect to", "role")


def _identities(c: Checker) -> None:
    ids = {role: e[2]["gNBs"][0].get("gNB_ID") for role in ("cucp", "cuup", "du") if (e := _first(c, role))}
    if len(set(ids.values())) > 1:
        for role in ids:
            entry = _first(c, role)
            if entry:
                c.add(entry[1], "gNBs[0].gNB_ID", "gNB_ID differs between the split's parts: "
                      + ", ".join(f"{r} {v}" for r, v in ids.items()), "role")
    cells = {role: e[2]["gNBs"][0].get("nr_cellid") for role in ("cucp", "du") if (e := _first(c, role))}
    if len(set(cells.values())) > 1:
        e = _first(c, "du")
        if e:
            c.add(e[1], "gNBs[0].nr_cellid", "NR cell id differs between CU-CP and DU: "
                  + ", ".join(f"{r} {v}" for r, v in cells.items()), "role")


def _plmn(c: Checker) -> None:
    v = c.values
    mcc, mnc = int(v["plmn"]["mcc"]), str(v["plmn"]["mnc"])
    want_slices = sorted((int(s["sst"]), None if s.get("sd") is None else int(str(s["sd"]), 16)) for s in v["s_nssai"])
    for role in ("cucp", "cuup", "du", "gnb"):
        for _svc_, path, d in c.configs.get(f"oai:{role}", []):
            g = d["gNBs"][0]
            if int(g.get("tracking_area_code", -1)) != int(v["tac"]):
                c.add(path, "gNBs[0].tracking_area_code", f"TAC {g.get('tracking_area_code')} differs from "
                      f"stack.yaml tac {v['tac']}", "plmn")
            for i, p in enumerate(g.get("plmn_list") or []):
                got = (p.get("mcc"), p.get("mnc"), p.get("mnc_length"))
                if got != (mcc, int(mnc), len(mnc)):
                    c.add(path, f"gNBs[0].plmn_list[{i}]", f"PLMN mcc {got[0]} mnc {got[1]} (length {got[2]}) "
                          f"differs from stack.yaml plmn {v['plmn']['mcc']}/{mnc}", "plmn")
                slices = sorted((int(s.get("sst", -1)), s.get("sd")) for s in p.get("snssaiList") or [])
                if slices != want_slices:
                    c.add(path, f"gNBs[0].plmn_list[{i}].snssaiList", f"S-NSSAI {p.get('snssaiList')} differs "
                          f"from stack.yaml s_nssai {v['s_nssai']}", "plmn")


def _ues(c: Checker, oai: dict[str, Any]) -> None:
    v = c.values
    prov = {str(s.get("imsi")): s for s in ((c._provision_data() or {}).get("subscribers") or [])}
    radio = _svc(c, "du") or _svc(c, "gnb")
    for svc, path, d in c.configs.get("oai:ue", []):
        u = d["uicc0"]
        imsi = str(u.get("imsi", ""))
        sub = prov.get(imsi)
        if sub is None:
            c.add(path, "uicc0.imsi", f"IMSI {imsi} is not among the provisioned subscribers", "credentials")
        else:
            if str(u.get("key", "")).lower() != str(sub.get("k", "")).lower():
                c.add(path, "uicc0.key", f"K differs from the provisioned K of IMSI {imsi}", "credentials")
            if str(u.get("opc", "")).lower() != str(sub.get("opc", "")).lower():
                c.add(path, "uicc0.opc", f"OPc differs from the provisioned OPc of IMSI {imsi}", "credentials")
        if str(u.get("dnn")) != str(v["dnn"]):
            c.add(path, "uicc0.dnn", f"DNN {u.get('dnn')} differs from stack.yaml dnn {v['dnn']}", "plmn")
        if int(u.get("nssai_sst", -1)) != int(v["s_nssai"][0]["sst"]):
            c.add(path, "uicc0.nssai_sst", f"SST {u.get('nssai_sst')} differs from stack.yaml s_nssai", "plmn")
        cmd = _program(c, svc)
        for opt, net, owner, what in (("--rfsimulator.serveraddr", "ran", radio, "RF simulator server"),):
            if opt not in cmd or cmd.index(opt) + 1 >= len(cmd):
                c.add(c.svc_file(svc, "command"), f"services.{svc}.command", f"no {opt}: the nrUE would look for "
                      "its RF simulator server on 127.0.0.1", "reference")
                continue
            c.expect(c.svc_file(svc, "command"), f"services.{svc}.command {opt}", cmd[cmd.index(opt) + 1],
                     owner, net, what)
        if "--rfsimulator.serverport" in cmd:
            i = cmd.index("--rfsimulator.serverport") + 1
            _port(c, c.svc_file(svc, "command"), f"services.{svc}.command --rfsimulator.serverport",
                  cmd[i] if i < len(cmd) else None, oai.get("rfsim_port"), "RF simulator port")
