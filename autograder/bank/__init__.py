"""Stage 1, the question bank: YAML problem files in, typed and validated `Problem`s out.

model.py (the schema's shared pieces; each kind's model is in autograder/kinds/),
load.py (YAML -> models), inputs.py (test input specs -> arrays), variants.py
(parameters -> numbers and answers), render.py (templates -> Markdown),
outputs.py (judging function outputs), resolve.py and reference_source.py
(references and their source), validate.py (`qkv validate`).

Nothing is imported here: the kinds import the modules below load.py, and
load.py imports the kinds.
"""
