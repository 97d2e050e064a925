"""Stage 1, the question bank: YAML problem files in, typed and validated `Problem`s out.

load.py (YAML -> the kinds' models), folders.py (problem folders and their own
code), validate.py (`qkv validate`), measures.py, cues.py and guessing.py (whether
the bank's scores measure knowledge: what guessing earns, numbers one problem gives
away for another, forms of the text that tell the answer).

Nothing is imported here. The bank imports the kinds (autograder/kinds/: their
registry, their models and the schema's shared pieces), never the other way.
"""
