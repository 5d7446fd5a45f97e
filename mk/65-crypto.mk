# Cipher micro-benchmark: the ESP schemes, ChaCha20-Poly1305 and 5G NEA2/NIA2 without the network
# (testbed/crypto_bench.py, analysis/crypto.py; docs/bench-crypto.md). No root, no Docker.
CRYPTO_SIZES   ?=
CRYPTO_REPEATS ?=
CRYPTO_SCHEMES ?=
AESNI          ?= both
SPEED_SECONDS  ?= 1
.PHONY: bench-crypto

bench-crypto: ## time the ciphers (64 B..64 MiB, with and without AES-NI, openssl speed check) and write table + figure
	@run_dir="$$($(PYTHON) -m testbed bench-crypto --results "$(RESULTS)" --campaign "$(CAMPAIGN)" \
	    --aesni "$(AESNI)" --speed-seconds "$(SPEED_SECONDS)" \
	    $(if $(CRYPTO_SIZES),--sizes "$(CRYPTO_SIZES)") $(if $(CRYPTO_REPEATS),--repeats "$(CRYPTO_REPEATS)") \
	    $(if $(CRYPTO_SCHEMES),--schemes "$(CRYPTO_SCHEMES)"))" \
	  && echo "raw: $$run_dir" \
	  && $(PYTHON) -m analysis crypto "$$run_dir" --out "$(ANALYSIS_OUT)/crypto"
