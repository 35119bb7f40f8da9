"""Test and benchmark harness: runs the whole Braid stack the way users do, on free ports."""
