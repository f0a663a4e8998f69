"""Test helpers for the scoring service, the collector and the alert rules (external tools, OTLP capture)."""
