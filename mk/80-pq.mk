# Post-quantum tools the host side needs (docs/overlays/*.md "Post-quantum"), outside the repository
# and cached (G5TB_CACHE, default /var/cache/g5tb; a second run reuses them): Debian roots of newer
# suites (scripts/suite-root.sh: sid's strongSwan 6 for IKEv2 with ML-KEM, trixie's OpenSSL 3.5 for
# the TLS hybrid groups) and the Rosenpass daemon from crates.io (pinned, cargo install --locked).
G5TB_CACHE        ?= /var/cache/g5tb
ROSENPASS_VERSION ?= $(shell sed -n "s/^ARG ROSENPASS_VERSION=//p" images/tools/Dockerfile)
ROSENPASS_ROOT    ?= $(G5TB_CACHE)/rosenpass-$(ROSENPASS_VERSION)
PQ_OPENSSL        ?= openssl
HS_BOOTS          ?= 5
HS_COUNT          ?= 20
.PHONY: pq-tools pq-roots rosenpass bench-handshake

pq-tools: pq-roots rosenpass ## the post-quantum tools for the namespace tests and benchmarks (root; cached in G5TB_CACHE)

pq-roots: ## Debian roots: sid's strongSwan 6 (ipsec/pq-root.env), trixie's OpenSSL 3.5 (tls/pq-root.env) (root, debootstrap)
	G5TB_ROOTS="$(G5TB_CACHE)/roots" bash scripts/suite-root.sh ipsec/pq-root.env tls/pq-root.env

rosenpass: ## the rosenpass daemon (the version the tools image pins) from crates.io into G5TB_CACHE/rosenpass-VERSION/bin (cargo, libclang, libsodium)
	@if [ -x "$(ROSENPASS_ROOT)/bin/rosenpass" ]; then echo "$(ROSENPASS_ROOT)/bin/rosenpass"; \
	 elif ! command -v cargo >/dev/null; then echo "rosenpass: no cargo (Rust): apt-get install cargo-web rustc-web (Debian 12), or rustup's stable toolchain" >&2; exit 1; \
	 else SODIUM_USE_PKG_CONFIG=1 CARGO_HOME="$(G5TB_CACHE)/cargo-home" CARGO_TARGET_DIR="$(G5TB_CACHE)/cargo-target" \
	   nice cargo install --locked rosenpass --version "$(ROSENPASS_VERSION)" --root "$(ROSENPASS_ROOT)" -j "$$(nproc)" \
	   && echo "$(ROSENPASS_ROOT)/bin/rosenpass"; fi

# PROFILE's handshakes between two namespaces, HS_COUNT per boot, HS_BOOTS boots (root); the roots and
# rosenpass of the targets above are used when made (IPSEC_ROOT, TLS_ROOT, PATH)
bench-handshake: ## handshake micro-benchmark of PROFILE (HS_BOOTS boots x HS_COUNT handshakes; root)
	@ipsec_root="$$(G5TB_ROOTS="$(G5TB_CACHE)/roots" bash scripts/suite-root.sh --path ipsec/pq-root.env || true)"; \
	 tls_root="$$(G5TB_ROOTS="$(G5TB_CACHE)/roots" bash scripts/suite-root.sh --path tls/pq-root.env || true)"; \
	 [ -f "$$ipsec_root/.g5tb-root" ] && export IPSEC_ROOT="$${IPSEC_ROOT:-$$ipsec_root}"; \
	 [ -f "$$tls_root/.g5tb-root" ] && export TLS_ROOT="$${TLS_ROOT:-$$tls_root}"; \
	 PATH="$(ROSENPASS_ROOT)/bin:$$PATH" $(PYTHON) -m testbed handshake-bench --profile "$(PROFILE)" \
	   $(if $(PLANE),--plane "$(PLANE)") --boots "$(HS_BOOTS)" --handshakes "$(HS_COUNT)" --results "$(RESULTS)" \
	   --campaign "$(CAMPAIGN)" --state "$(STATE)"
