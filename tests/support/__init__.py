"""Reusable test support: a local OpenAI-compatible server and its pytest fixtures."""
