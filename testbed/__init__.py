"""Control side of the 5G security-latency testbed: profiles, stack values, rendering, checks."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
