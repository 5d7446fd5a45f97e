"""RAN=ueransim (the default): UERANSIM's gNB, UE 1, UE 2 and the scaling UEs (README.md)."""
