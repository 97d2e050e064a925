"""Self-check (on the side): a student's file and the release's self-check data in, verdicts out, offline.

The checker is `qkv_check.py`, the script students run and their notebook imports, and its parts, the
package `qkv_selfcheck/` beside it (its `__init__.py` says which part does what). Both are copied byte
for byte into every student release beside a copy of the portable runtime (`qkv_runtime/`: the grader's
own notebook reader, return-value rules, comparison and answer parsers), so none of them may import
anything of `autograder` (tests/selfcheck/test_selfcheck_parts.py); `qkv check NAME FILE` runs the same code for
instructors. The data it reads, `selfcheck.json`, is written by `autograder.assemble.student.selfcheck_data`:
public tests, and sealed written answers (`qkv_runtime.sealed`); see docs/self-check.md.
"""
