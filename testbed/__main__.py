"""`python -m testbed <command>`: the control CLI behind the Makefile.

Each command lives in its own module under testbed/cli/ and registers itself in COMMANDS.
Exit codes: 0 ok, 1 failure, 2 usage error (unknown profile, bad parameter), 130 interrupt,
141 stdout's reader left (`| head`; testbed/cli/pipes.py).
"""
from testbed.cli import main
from testbed.cli.pipes import exit_with

exit_with(main)
