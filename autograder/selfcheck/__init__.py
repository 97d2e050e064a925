"""Self-check (on the side): a student's file and the release's self-check data in, verdicts out, offline.

The checker itself is `qkv_check.py`, a standalone script copied verbatim into every
student release beside a copy of the portable runtime (`qkv_runtime/`: the grader's
own notebook reader, return-value rules, comparison and answer parsers); `qkv check
NAME FILE` runs the same code for instructors. The data it reads, `selfcheck.json`,
is written by `autograder.assemble.student.selfcheck_data`: public tests, and sealed
written answers (`qkv_runtime.sealed`); see docs/self-check.md.
"""
