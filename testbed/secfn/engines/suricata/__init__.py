"""The suricata engine of the UPF security function (README.md)."""
