"""Self-check (on the side): a student's file and the release's self-check data in, verdicts out, offline.

The checker itself is `qkv_check.py`, a standalone script (numpy only) copied
into every student release; `qkv check` runs the same code for instructors.
"""
