"""The passthrough engine of the UPF security function (README.md)."""
