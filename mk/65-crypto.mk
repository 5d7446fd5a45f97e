# Cipher micro-benchmark: the ESP schemes, ChaCha20-Poly1305 and 5G NEA2/NIA2 without the network
# (testbed/crypto_bench.py, analysis/crypto.py; docs/bench-crypto.md). No root, no Docker.
CRYPTO_SIZES   ?=
CRYPTO_REPEATS ?=
CRYPTO_SCHEMES ?=
AESNI          ?= both
SPEED_SECONDS  ?= 1
# the `openssl speed` of ML-KEM/ML-DSA needs OpenSSL >= 3.5: PQ_OPENSSL, else Debian 13's from the
# root `make pq-roots` made (tls/openssl.sh), else the host's (older: those rows are left out, said why)
PQ_TLS_ROOT    = $(shell G5TB_ROOTS="$(G5TB_CACHE)/roots" bash scripts/suite-root.sh --path tls/pq-root.env 2>/dev/null)
PQ_OPENSSL_CMD = $(if $(filter-out openssl,$(PQ_OPENSSL)),$(PQ_OPENSSL),$(if $(wildcard $(PQ_TLS_ROOT)/.g5tb-root),env TLS_ROOT=$(PQ_TLS_ROOT) $(CURDIR)/tls/openssl.sh openssl,openssl))
.PHONY: bench-crypto

bench-crypto: ## time the ciphers (64 B..64 MiB, AES-NI on/masked, openssl speed check) and ML-KEM/X25519/P-256/ML-DSA per second; tables + figures
	@run_dir="$$($(PYTHON) -m testbed bench-crypto --results "$(RESULTS)" --campaign "$(CAMPAIGN)" \
	    --aesni "$(AESNI)" --speed-seconds "$(SPEED_SECONDS)" \
	    $(if $(CRYPTO_SIZES),--sizes "$(CRYPTO_SIZES)") $(if $(CRYPTO_REPEATS),--repeats "$(CRYPTO_REPEATS)") \
	    $(if $(CRYPTO_SCHEMES),--schemes "$(CRYPTO_SCHEMES)"))" \
	  && echo "raw: $$run_dir" \
	  && $(PYTHON) -m analysis crypto "$$run_dir" --out "$(ANALYSIS_OUT)/crypto"
	@pq_dir="$$($(PYTHON) -m testbed bench-crypto-pq --results "$(RESULTS)" --campaign "$(CAMPAIGN)" \
	    --openssl "$(PQ_OPENSSL_CMD)")" \
	  && echo "raw: $$pq_dir" \
	  && $(PYTHON) -m analysis pq "$$pq_dir" --out "$(ANALYSIS_OUT)/pq"
