"""Runtime plug-ins (ENGINE=, testbed/contract.py RuntimePlugin): how a rendered stack runs."""
