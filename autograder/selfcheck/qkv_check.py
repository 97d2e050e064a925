"""Offline self-check of a qkv assignment (placeholder until the self-check issue lands)."""
