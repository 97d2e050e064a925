"""Self-check (on the side): a student's file and the release's self-check data in, verdicts out, offline.

The checker itself is `qkv_check.py`, a standalone script (numpy, and torch for the
torch track, plus `qkv_answers.py` beside it) copied verbatim into every student
release; `qkv check NAME FILE` runs the same code for instructors. The data it reads,
`selfcheck.json`, is written by `autograder.build.student.selfcheck_data`: public tests,
and salted digests of the written answers (`autograder.answer_forms`); see
docs/self-check.md.
"""
