"""Parsers: pure functions from one raw file to a tidy pandas DataFrame (or small record)."""
