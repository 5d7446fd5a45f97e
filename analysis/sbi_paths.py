"""SBI request paths -> service operation templates (`POST /nausf-auth/v1/ue-authentications`).

A 3GPP SBI path is `/<service>/<version>/<resource>/...` (TS 29.501 section 4.4.1): resource names
are fixed lower-case words, the other segments are identifiers of one UE, one context or one NF
instance. The template keeps the words and replaces each identifier by a placeholder, so the same
operation of every UE and every boot falls into one group:

- UE identities (TS 29.571 `Supi`, `Gpsi`, `SupiOrSuci`: `imsi-…`, `nai-…`, `suci-…`, `msisdn-…`,
  `extid-…`, ...) -> `{ueId}`
- UUIDs (NF instance ids, subscription ids), integers (Open5GS context refs, PLMN ids such as
  `00101`) and long hex strings -> `{id}`

The query string is dropped (`?target-nf-type=AUSF&requester-nf-type=AMF` -> the path alone):
NF discovery with other parameters is the same operation. Resource words that hold digits
(`5g-aka-confirmation`, `n1-n2-messages`, `amf-3gpp-access`, `v1`) are words, not identifiers.
"""
from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import unquote

UE_ID = "{ueId}"
ID = "{id}"

_UE = re.compile(r"^(imsi|suci|supi|nai|msisdn|gli|gci|extid|imei|imeisv|mac)-.+", re.IGNORECASE)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_NUMBER = re.compile(r"^\d+$")
_HEX = re.compile(r"^(0x)?[0-9a-f]{8,}$", re.IGNORECASE)
_VERSION = re.compile(r"^v\d+$")


@lru_cache(maxsize=4096)        # service names, versions and resource words repeat in every request
def segment(text: str) -> str:
    """One path segment as it appears in the template."""
    s = unquote(text)
    if _UE.match(s):
        return UE_ID
    if _UUID.match(s) or _NUMBER.match(s) or (_HEX.match(s) and not _VERSION.match(s)):
        return ID
    return s


def template(path: str) -> str:
    """`/nudm-sdm/v2/imsi-001010000000001/am-data?plmn-id=...` -> `/nudm-sdm/v2/{ueId}/am-data`;
    '' for an empty path; a full URI (`http://host/...`, HTTP/1 proxies) keeps its path only."""
    p = path.split("?", 1)[0].split("#", 1)[0]
    if "://" in p:
        p = "/" + p.split("://", 1)[1].partition("/")[2]
    if not p:
        return ""
    return "/".join(segment(s) if s else s for s in p.split("/"))


def operation(method: str, path: str) -> str:
    """`POST /nausf-auth/v1/ue-authentications` (method and template); '' without both."""
    t = template(path)
    return f"{method} {t}" if method and t else ""


def service(path: str) -> str:
    """The SBI service of a path (`nausf-auth`), '' when the path has none."""
    parts = path.split("?", 1)[0].split("/")
    return parts[1] if len(parts) > 1 else ""
