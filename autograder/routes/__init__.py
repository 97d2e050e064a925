"""The front doors: each composes intake, grading and reports for one way instructors grade.

`class_grading.py` is `qkv grade` (a class folder, a resumable gradebook, every
report); `gradescope.py` runs inside Gradescope's image (one submission, one
results.json); `pytest_plugin.py` is `pytest --qkv NAME --qkv-submission FILE`. They
share the grade stage's intake, sandbox route and scoring, and the grading
policy written in the bundle, so a submission scores the same through each.
"""
