"""Stage 5, report: graded `SubmissionResult`s (from the gradebook) in, files for people and platforms out.

csv.py (gradebook.csv for spreadsheets and LMSs), results_json.py (Gradescope's
results.json per student), feedback.py (feedback.html per student: lessons.py
groups the lost points by the mistake that explains them, pictures.py draws the
failed tests' matrices, written.py explains written answers; docs/feedback.md),
summary.py (class statistics for the terminal). Every writer replaces its file
atomically.
"""
