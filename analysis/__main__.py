"""Entry point for `python -m analysis` (141 when stdout's reader left: testbed/cli/pipes.py)."""
from analysis.cli import main
from testbed.cli.pipes import exit_with

exit_with(main)
