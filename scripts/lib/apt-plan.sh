# shellcheck shell=bash
# apt-plan.sh: what an `apt-get -s install ...` would do to this host, and whether scripts/setup-host.sh
# may do it. Sourced; no side effects. Tests: tests/scripts/test_apt_plan.py (on captured apt output).
#
# apt's simulation prints one line per action (apt-pkg's pkgSimulate):
#   Inst NAME (NEW RELEASES [ARCH])          a package not installed yet
#   Inst NAME [OLD] (NEW RELEASES [ARCH])    an installed package upgraded (or downgraded)
#   Remv NAME [OLD]                          an installed package removed
# RELEASES is "Label:Version/Archive" per archive that has NEW, comma-separated, e.g.
# "Debian:12.15/oldstable, Debian-Security:12/oldstable-security"; a backports archive has no
# version ("Debian Backports:bookworm-backports").

# apt_plan: apt-get -s output on stdin -> one action a line, fields separated by '|':
#   new|NAME|NEW|RELEASES   upgrade|NAME|OLD|NEW|RELEASES   remove|NAME|OLD
apt_plan() {
  sed -n -e 's/^Inst \([^ ]*\) \[\([^]]*\)\] (\([^ ]*\) \(.*\) \[[^]]*\])\( .*\)\{0,1\}$/upgrade|\1|\2|\3|\4/p' \
    -e 's/^Inst \([^ []*\) (\([^ ]*\) \(.*\) \[[^]]*\])\( .*\)\{0,1\}$/new|\1|\2|\3/p' \
    -e 's/^Remv \([^ ]*\) \[\([^]]*\)\].*/remove|\1|\2/p' \
    -e 's/^Remv \([^ ]*\)$/remove|\1|/p'
}

# own_release VERSION_ID RELEASES: true when one of RELEASES is the host's own release: its
# version is VERSION_ID itself, a point release of it ("12.15") or its updates ("12-updates"),
# and it is no backports archive. Security archives carry the bare version ("12").
own_release() {
  local vid="$1" rel ver rels=()
  [[ -n "$vid" ]] || return 1
  IFS=',' read -ra rels <<<"$2"
  for rel in "${rels[@]}"; do
    rel="${rel# }"
    [[ "$rel" == *:*/* && "$rel" != *backports* ]] || continue
    ver="${rel#*:}" ver="${ver%%/*}"
    [[ "$ver" == "$vid" || "$ver" == "$vid".* || "$ver" == "$vid"-* ]] && return 0
  done
  return 1
}

# from_suite "ARCHIVES" RELEASES: true when one of RELEASES is one of ARCHIVES (space-separated
# archive names, e.g. "bookworm-backports oldstable-backports": apt shows the suite's archive,
# which suite_archives finds)
from_suite() {
  local rel rels=()
  [[ -n "$1" ]] || return 1
  IFS=',' read -ra rels <<<"$2"
  for rel in "${rels[@]}"; do
    rel="${rel# }" rel="${rel##*:}" rel="${rel##*/}"
    [[ " $1 " == *" $rel "* ]] && return 0
  done
  return 1
}

# suite_archives SUITE: SUITE and the archive names apt knows it by ("bookworm-backports" ->
# "oldstable-backports"), from `apt-cache policy` on stdin
suite_archives() {
  local a
  a="$(sed -n "s/.*[ ,]a=\([^,]*\),n=$1,.*/\1/p" | sort -u | tr '\n' ' ')"
  echo "$1 ${a% }"
}

# apt_judge VERSION_ID UPGRADE ["EXTRA_ARCHIVES"] ["OWN_ARCHIVES"]: apt_plan lines on stdin -> the
# verdict, first line
#   ok                      nothing installed changes: install
#   upgrades                dependency upgrades within the host's release, allowed (UPGRADE=1)
#   held                    such upgrades, refused (UPGRADE=0)
#   refused                 a removal, a downgrade, or a package (new or upgraded) from another
#                           release than the host's (a newer suite, a third-party archive)
# then one line per reason: "NAME OLD -> NEW" for an upgrade, or what is refused and why. New
# packages may also come from EXTRA_ARCHIVES (the backports of a package taken from there);
# upgrades never do. OWN_ARCHIVES: the host's release by archive name where it has no version
# (Debian testing, sid: "sid unstable", from suite_archives).
apt_judge() {
  local vid="$1" upgrade="$2" extra="${3:-}" own="${4:-}" kind name a b rel
  local ups=() bad=()
  while IFS='|' read -r kind name a b rel; do
    case "$kind" in
      remove) bad+=("$name would be removed") ;;
      new)
        # new|NAME|NEW|RELEASES: the releases are the 4th field here
        own_release "$vid" "$b" || from_suite "$own" "$b" || from_suite "$extra" "$b" \
          || bad+=("$name $a would come from ${b:-no archive} (not this host's release, $vid)") ;;
      upgrade)
        if dpkg --compare-versions "$b" lt "$a"; then
          bad+=("$name $a would be downgraded to $b")
        elif own_release "$vid" "$rel" || from_suite "$own" "$rel"; then
          ups+=("$name $a -> $b")
        else
          bad+=("$name $a -> $b would come from ${rel:-no archive} (not this host's release, $vid)")
        fi ;;
    esac
  done
  if ((${#bad[@]})); then
    echo refused
    printf '%s\n' "${bad[@]}"
  elif ((${#ups[@]})); then
    if [[ "$upgrade" == 1 ]]; then echo upgrades; else echo held; fi
    printf '%s\n' "${ups[@]}"
  else
    echo ok
  fi
}
