"""OpenAirInterface (v2.3.0) configs from the stack values: CU-CP, CU-UP, DU, monolithic gNB, nrUE.

Everything that must agree with the core (PLMN, TAC, S-NSSAI, DNN, the AMF's N2 address, the
subscribers' IMSI/K/OPc) and every address comes from nf-configs/stack.yaml; the cell comes from
nf-configs/oai-cell.yaml. Keys are the ones OAI v2.3.0 reads (openair2/GNB_APP/gnb_paramdef.h,
MACRLC_nr_paramdef.h, openair2/E1AP/e1ap_setup.c upstream); testbed/check/rules.py reads the
rendered files back and checks every address, port, PLMN and the F1/E1 roles.

Roles (docs/ran.md): the CU-CP is `tr_s_preference = "f1"` with `E1_INTERFACE.type = "cp"` (it
must not carry gNB_CU_UP_ID: OAI refuses that), the CU-UP `E1_INTERFACE.type = "up"` (run by
`nr-cuup`), the DU `MACRLCs.tr_n_preference = "f1"` with its F1-C and F1-U addresses apart
(`local_n_address`, `local_n_address_f1u`), the monolithic gNB `tr_n_preference = "local_RRC"`.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT, stack
from testbed.ran.oai.libconfig import Int64

CELL_FILE = ROOT / "nf-configs" / "oai-cell.yaml"
GNB_NODES = ("gnb", "cucp", "cuup", "du")        # the nodes that run nr-softmodem / nr-cuup
UU_CHOICES = ("nea0-nia2", "nea1-nia1", "nea2-nia2")   # UU=<ciphering>-<integrity> (docs/ran.md)
F1C_CU_PORT_C = 501            # OAI's F1 "portc" pair: unused by its SCTP (fixed 38472) but read
F1C_DU_PORT_C = 500


class OaiConfigError(ValueError):
    """A value the OAI configs cannot take (the message names it and the valid choices)."""


@lru_cache(maxsize=4)
def cell(path: Path = CELL_FILE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = yaml.safe_load(fh)
    return data


def arfcn_hz(arfcn: int) -> int:
    """The frequency of an NR-ARFCN (TS 38.104 5.4.2.1; up to 24.25 GHz)."""
    if 0 <= arfcn < 600000:
        return 5_000 * arfcn
    if 600000 <= arfcn <= 2016666:
        return 3_000_000_000 + 15_000 * (arfcn - 600000)
    raise OaiConfigError(f"NR-ARFCN {arfcn} is outside FR1 (nf-configs/oai-cell.yaml)")


def dl_center_frequency_hz(scc: dict[str, Any]) -> int:
    """The DL carrier's centre, the nrUE's -C: point A plus half the carrier
    (dl_carrierBandwidth PRBs of 12 subcarriers at 15 kHz x 2^dl_subcarrierSpacing)."""
    scs_hz: int = 15_000 * 2 ** int(scc["dl_subcarrierSpacing"])
    return arfcn_hz(int(scc["dl_absoluteFrequencyPointA"])) + int(scc["dl_carrierBandwidth"]) * 12 * scs_hz // 2


def _plmn_list(v: dict[str, Any]) -> list[dict[str, Any]]:
    mnc = str(v["plmn"]["mnc"])
    slices = []
    for s in v["s_nssai"]:
        entry: dict[str, Any] = {"sst": int(s["sst"])}
        if s.get("sd") is not None:
            entry["sd"] = int(str(s["sd"]), 16)
        slices.append(entry)
    return [{"mcc": int(v["plmn"]["mcc"]), "mnc": int(mnc), "mnc_length": len(mnc), "snssaiList": slices}]


def _log(v: dict[str, Any]) -> dict[str, Any]:
    level = str(v["oai"]["log_level"])
    return {"global_log_level": level}


def security(v: dict[str, Any], uu: str | None = None) -> dict[str, Any]:
    """The AS security group: the stack's preference lists, or exactly UU's pair (and integrity on
    the DRBs as well: the paper's 'NIA and NEA option 2' on the Uu interface)."""
    sec = v["oai"]["security"]
    if not uu:
        return {"ciphering_algorithms": list(sec["ciphering"]), "integrity_algorithms": list(sec["integrity"]),
                "drb_ciphering": str(sec["drb_ciphering"]), "drb_integrity": str(sec["drb_integrity"])}
    if uu not in UU_CHOICES:
        raise OaiConfigError(f"UU={uu!r}: must be one of {', '.join(UU_CHOICES)} (docs/ran.md)")
    nea, nia = uu.split("-")
    return {"ciphering_algorithms": [nea], "integrity_algorithms": [nia],
            "drb_ciphering": "yes", "drb_integrity": "yes"}


def _gnb_common(v: dict[str, Any], node: str) -> dict[str, Any]:
    o = v["oai"]
    return {"gNB_ID": int(o["gnb_id"]), "gNB_name": str(o["names"][node]),
            "tracking_area_code": int(v["tac"]), "plmn_list": _plmn_list(v)}


def _sctp(v: dict[str, Any]) -> dict[str, Any]:
    n = int(v["oai"]["sctp_streams"])
    return {"SCTP_INSTREAMS": n, "SCTP_OUTSTREAMS": n}


def _cell_groups(v: dict[str, Any]) -> dict[str, Any]:
    c = cell()
    return {"nr_cellid": Int64(int(v["oai"]["nr_cellid"])), "min_rxtxtime": int(c["min_rxtxtime"]),
            "servingCellConfigCommon": [copy.deepcopy(c["serving_cell_config_common"])]}


def _radio_sections(v: dict[str, Any], macrlc_transport: dict[str, Any]) -> dict[str, Any]:
    c = cell()
    rfsim = {"serveraddr": "server", "serverport": int(v["oai"]["rfsim_port"]),
             "options": list(c["rfsimulator"]["options"]), "modelname": str(c["rfsimulator"]["modelname"])}
    return {"MACRLCs": [{**copy.deepcopy(c["macrlc"]), **macrlc_transport}],
            "L1s": [copy.deepcopy(c["l1"])], "RUs": [copy.deepcopy(c["ru"])], "rfsimulator": rfsim}


def _amf(v: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"ipv4": stack.address("amf", "n2", v)}]


def cucp_config(values: dict[str, Any] | None = None, uu: str | None = None) -> dict[str, Any]:
    v = values or stack.load()
    o = v["oai"]
    e1 = {"type": "cp", "ipv4_cucp": stack.address("cucp", "e1", v), "port_cucp": int(v["e1ap_port"]),
          "ipv4_cuup": "0.0.0.0", "port_cuup": int(v["e1ap_port"])}
    gnb = {**_gnb_common(v, "cucp"), "nr_cellid": Int64(int(o["nr_cellid"])),
           "tr_s_preference": "f1", "local_s_address": stack.address("cucp", "f1c", v),
           "remote_s_address": "0.0.0.0", "local_s_portc": F1C_CU_PORT_C, "local_s_portd": int(v["gtpu_port"]),
           "remote_s_portc": F1C_DU_PORT_C, "remote_s_portd": int(v["gtpu_port"]),
           "SCTP": _sctp(v), "amf_ip_address": _amf(v), "E1_INTERFACE": [e1],
           "NETWORK_INTERFACES": {"GNB_IPV4_ADDRESS_FOR_NG_AMF": stack.address("cucp", "n2", v)}}
    return {"Active_gNBs": [gnb["gNB_name"]], "Asn1_verbosity": "none", "gNBs": [gnb],
            "security": security(v, uu), "log_config": _log(v)}


def cuup_config(values: dict[str, Any] | None = None) -> dict[str, Any]:
    v = values or stack.load()
    o = v["oai"]
    e1 = {"type": "up", "ipv4_cucp": stack.address("cucp", "e1", v), "ipv4_cuup": stack.address("cuup", "e1", v)}
    n3 = stack.address("cuup", "n3", v)
    gnb = {**_gnb_common(v, "cuup"), "gNB_CU_UP_ID": int(o["gnb_cu_up_id"]),
           "tr_s_preference": "f1", "local_s_address": stack.address("cuup", "f1u", v),
           "remote_s_address": stack.address("du", "f1u", v),
           "local_s_portc": F1C_CU_PORT_C, "local_s_portd": int(v["gtpu_port"]),
           "remote_s_portc": F1C_DU_PORT_C, "remote_s_portd": int(v["gtpu_port"]),
           "SCTP": _sctp(v), "E1_INTERFACE": [e1],
           "NETWORK_INTERFACES": {"GNB_IPV4_ADDRESS_FOR_NG_AMF": n3, "GNB_IPV4_ADDRESS_FOR_NGU": n3,
                                  "GNB_PORT_FOR_S1U": int(v["gtpu_port"])}}
    return {"Active_gNBs": [gnb["gNB_name"]], "Asn1_verbosity": "none", "gNBs": [gnb], "log_config": _log(v)}


def du_config(values: dict[str, Any] | None = None) -> dict[str, Any]:
    v = values or stack.load()
    o = v["oai"]
    gnb = {**_gnb_common(v, "du"), "gNB_DU_ID": int(o["gnb_du_id"]), **_cell_groups(v), "SCTP": _sctp(v)}
    transport = {"tr_n_preference": "f1", "local_n_address": stack.address("du", "f1c", v),
                 "local_n_address_f1u": stack.address("du", "f1u", v),
                 "remote_n_address": stack.address("cucp", "f1c", v),
                 "local_n_portc": F1C_DU_PORT_C, "local_n_portd": int(v["gtpu_port"]),
                 "remote_n_portc": F1C_CU_PORT_C, "remote_n_portd": int(v["gtpu_port"])}
    return {"Active_gNBs": [gnb["gNB_name"]], "Asn1_verbosity": "none", "gNBs": [gnb],
            **_radio_sections(v, transport), "log_config": _log(v)}


def gnb_config(values: dict[str, Any] | None = None, uu: str | None = None) -> dict[str, Any]:
    """The monolithic gNB (RAN=oai): the DU's cell and the CU-CP's N2, N3 on its own GTP-U."""
    v = values or stack.load()
    gnb = {**_gnb_common(v, "gnb"), **_cell_groups(v), "SCTP": _sctp(v), "amf_ip_address": _amf(v),
           "NETWORK_INTERFACES": {"GNB_IPV4_ADDRESS_FOR_NG_AMF": stack.address("gnb", "n2", v),
                                  "GNB_IPV4_ADDRESS_FOR_NGU": stack.address("gnb", "n3", v),
                                  "GNB_PORT_FOR_S1U": int(v["gtpu_port"])}}
    return {"Active_gNBs": [gnb["gNB_name"]], "Asn1_verbosity": "none", "gNBs": [gnb],
            **_radio_sections(v, {"tr_n_preference": "local_RRC"}),
            "security": security(v, uu), "log_config": _log(v)}


def ue_config(imsi: str, k: str, opc: str, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """An nrUE's SIM (uicc0): the subscriber's IMSI, K and OPc, the stack's DNN and first slice."""
    v = values or stack.load()
    mcc, mnc = str(v["plmn"]["mcc"]), str(v["plmn"]["mnc"])
    if not str(imsi).startswith(mcc + mnc):
        raise OaiConfigError(f"IMSI {imsi} does not start with the stack's PLMN {mcc}{mnc} "
                             "(nf-configs/stack.yaml: plmn / subscribers)")
    first = v["s_nssai"][0]
    uicc: dict[str, Any] = {"imsi": str(imsi), "key": str(k).lower(), "opc": str(opc).lower(),
                            "dnn": str(v["dnn"]), "nssai_sst": int(first["sst"])}
    if first.get("sd") is not None:
        uicc["nssai_sd"] = int(str(first["sd"]), 16)
    return {"uicc0": uicc, "log_config": _log(v)}


def radio_args() -> list[str]:
    """The radio node's (monolithic gNB, DU) device: OAI's RF simulator (lib/librfsimulator.so).
    Without it nr-softmodem loads liboai_device.so, a real radio's, which the image has not, and
    exits (seen in the full-kernel guest: `Library oai_device couldn't be loaded`, exit 139)."""
    return ["--rfsim"]


def ue_args(radio_node: str, values: dict[str, Any] | None = None) -> list[str]:
    """The nrUE's command-line options for the cell (they are not config keys in OAI v2.3.0) and
    the RF simulator server it connects to (the DU, or the monolithic gNB)."""
    v = values or stack.load()
    scc = cell()["serving_cell_config_common"]
    return ["--rfsim", "-r", str(int(scc["dl_carrierBandwidth"])),
            "--numerology", str(int(scc["subcarrierSpacing"])),
            "--band", str(int(scc["dl_frequencyBand"])),
            "-C", str(dl_center_frequency_hz(scc)),
            "--rfsimulator.serveraddr", stack.address(radio_node, "ran", v),
            "--rfsimulator.serverport", str(int(v["oai"]["rfsim_port"]))]
