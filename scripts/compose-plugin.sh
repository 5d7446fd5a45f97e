#!/usr/bin/env bash
# scripts/compose-plugin.sh: Docker Compose v2 as a docker CLI plug-in, so that `docker compose
# config` renders the stacks on a host with only the docker client (issue 30 §5): the pinned
# release is built once from the Go module proxy and cached in G5TB_CACHE (default
# /var/cache/g5tb), like .ci/pq-prepare's roots. Its go.mod has `exclude` lines, so `go install
# ...@version` refuses; the downloaded module is built as the main module instead
# (`go build ./cmd` in a writable copy of it). The second run only installs: seconds.
# Installs where the docker client searches: as root /usr/local/lib/docker/cli-plugins (every
# user, the CI's unprivileged one included, scripts/test-as-user.sh), else
# ${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins. Prints the installed plug-in's path.
# Env: COMPOSE_VERSION (default below), G5TB_CACHE, COMPOSE_PLUGIN_DIR (where to install).
set -euo pipefail

VERSION="${COMPOSE_VERSION:-v2.40.3}"
MODULE="github.com/docker/compose/v2"
CACHE="${G5TB_CACHE:-/var/cache/g5tb}"
OUT="$CACHE/compose-$VERSION/docker-compose"

if [[ -n "${COMPOSE_PLUGIN_DIR:-}" ]]; then
  dest="$COMPOSE_PLUGIN_DIR"
elif [[ "$(id -u)" == 0 ]]; then
  dest=/usr/local/lib/docker/cli-plugins
else
  dest="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
fi

if [[ ! -x "$OUT" ]]; then
  # the official Go tarball's place when it is not on PATH (Debian 12's golang-go, 1.19, is too old)
  command -v go >/dev/null || PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null || { echo "compose-plugin: no Go toolchain (>= 1.24: go.dev/dl into /usr/local/go, or Debian 13's golang-go)" >&2; exit 1; }
  mkdir -p "$(dirname "$OUT")"
  work="$(mktemp -d "$CACHE/compose-build.XXXXXX")"
  trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
  # the module cache is read-only; GOFLAGS=-mod=mod lets `go mod download` ignore a vendor dir
  dir="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -d "$dir" ]] || { echo "compose-plugin: go mod download $MODULE@$VERSION gave no module dir" >&2; exit 1; }
  cp -r "$dir" "$work/src"
  chmod -R u+w "$work/src"
  # the version `docker compose version` prints, as upstream's Makefile stamps it
  (cd "$work/src" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$VERSION" \
    -o "$work/docker-compose" ./cmd)
  mv "$work/docker-compose" "$OUT.tmp"
  mv "$OUT.tmp" "$OUT"
fi

mkdir -p "$dest"
install -m 0755 "$OUT" "$dest/docker-compose"
echo "$dest/docker-compose"
