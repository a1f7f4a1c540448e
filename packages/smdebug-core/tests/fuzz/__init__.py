"""Fuzzing harnesses and their shared targets (see targets.py and harness.py)."""
