# Key material: CA + node certificates, IPsec PSKs, WireGuard keys, SIM secrets (testbed/keys.py).
.PHONY: keys

keys: ## create missing keys, certificates, PSKs and SIM secrets under $(STATE)/keys (never replaces a key)
	$(PYTHON) -m testbed keys --state "$(STATE)"


.PHONY: datapath
datapath: ## show which IPsec/WireGuard datapath (kernel or userspace), TUN and SCTP this host offers
	@$(PYTHON) -m testbed datapath
