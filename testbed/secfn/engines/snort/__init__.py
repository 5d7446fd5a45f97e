"""The snort engine of the UPF security function (README.md)."""
