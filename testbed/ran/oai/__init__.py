"""RAN=oai (OpenAirInterface's monolithic gNB) and RAN=split (CU-CP, CU-UP, DU) with nrUEs on OAI's
RF simulator (README.md)."""
