"""README.md "How long the defaults take": its measured parts are the defaults' arithmetic
(testbed/runparams.py) and its profile counts the catalogue's, so the table cannot drift."""
from __future__ import annotations

from testbed import ROOT, profiles, runparams


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## How long the defaults take", 1)[1].split("\n## ", 1)[0]


def test_measured_parts_follow_the_default_parameters() -> None:
    s = section()
    n3 = runparams.validate("n3", {})
    per_boot = (n3["warmup"] + len(n3["sizes"]) * n3["sets"] * n3["pings"]) * n3["interval"]
    assert f"{n3['boots']} x {per_boot:,.0f} s" in s
    ov = runparams.validate("overlay", {})
    per_boot = (ov["warmup"] + len(ov["sizes"]) * ov["sets"] * ov["pings"]) * ov["interval"]
    assert f"{ov['boots']} x {per_boot:.2f} s" in s
    tp = runparams.validate("throughput", {})
    assert f"{tp['boots']} x {len(tp['transports']) * tp['reps'] * tp['duration']} s" in s
    assert f"{runparams.validate('sbi', {})['iterations']} fresh cores" in s
    cpu = runparams.validate("cpu", {})
    assert f"{len(cpu['ues'])} UE counts x {cpu['reps']} reps = {len(cpu['ues']) * cpu['reps']} boots" in s


def test_campaign_profile_counts_are_the_catalogues() -> None:
    s = section()
    on = {plane: len(profiles.names(plane)) for plane in ("n3", "sbi")}     # what a campaign runs (refused ones apart)
    assert f"`campaign-n3`: {on['n3']} profiles" in s and f"`campaign-overlay`: {on['n3']} profiles" in s
    assert f"`campaign-sbi`: {on['sbi']} profiles" in s


def _catalogue_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in profiles.load().values():
        if not p.refused:                   # `make profiles` counts those that run (refused ones apart)
            counts[p.protocol] = counts.get(p.protocol, 0) + 1
    return counts


def test_the_introductions_profile_counts_are_the_catalogues() -> None:
    """README said "68 profiles" where `make profiles` counts 71 (the DTLS ones were missing)."""
    import re
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    intro = text.split("\n## ", 1)[0]
    counts = _catalogue_counts()
    total = re.search(r"`profiles\.yaml`, (\d+) profiles", intro)
    assert total and int(total.group(1)) == sum(counts.values()), (total and total.group(0), counts)
    # the post-quantum part (issue 20): the post-quantum profiles and the classical references they are set beside
    from testbed import registry
    running = [p for p in profiles.load().values() if not p.refused]
    pq = {p.id for p in running if registry.overlay(p.protocol).post_quantum(p)}
    refs = {r for p in running if p.id in pq for r in [registry.overlay(p.protocol).classical_reference(p)] if r}
    # the references made for this part (IPsec's X25519 key exchange, TLS's X25519 group), not the classical catalogue's
    cat = profiles.load()
    pq |= {r for r in refs if cat[r].params.get("ke") or cat[r].params.get("paper") == "pq"}
    classical = {k: sum(1 for p in running if p.protocol == k and p.id not in pq) for k in counts}
    assert f"and {len(pq)}\npost-quantum ones" in intro or f"and {len(pq)} post-quantum ones" in " ".join(intro.split())
    assert f"{classical['tls']} TLS profiles" in intro and f"{counts['dtls']} DTLS" in intro
    assert f"{classical['ipsec'] // 4} mandatory IPsec configurations" in intro and "four establishment modes" in intro


def test_run_overlay_takes_as_long_everywhere_the_readme_says() -> None:
    """README promised run-overlay "in seconds" beside its own table's "1-2 min per profile"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in section().splitlines() if line.startswith("| `make run-overlay"))
    claim = row.split("|")[3].strip().split(" (")[0]           # the "with boots" cell: "1-2 min per profile"
    assert claim.endswith("per profile"), row
    duration = claim.removesuffix(" per profile")
    blocks = []                          # table rows one by one, prose paragraphs whole (they wrap)
    for para in text.split("\n\n"):
        blocks += para.splitlines() if para.lstrip().startswith("|") else [" ".join(para.split())]
    mentions = [b for b in blocks if "run-overlay" in b and b != row]
    for line in mentions:
        assert "in seconds" not in line and "(seconds" not in line, line
    assert sum(duration in line for line in mentions) >= 2, (duration, mentions)
