"""Stage 4, grade: a grading bundle and submissions in, scored `SubmissionResult`s out; never a report.

intake.py reads submissions (never runs them); execute.py decides which calls go
to the sandbox; route.py runs them here (`LocalRoute`) or on Dask workers
(cluster.py); score.py compares plain arrays with the expected values in a
trusted process; gradebook/ keeps every result in SQLite (or PostgreSQL), one
transaction per submission; service.py is the one path from a program handed in to
a grading kept with its late outcome, which every front door calls. The front doors
that compose grading with reports live in autograder/routes/ and autograder/serve/.
"""
