"""qkv: autograded exercises and exam prep for the fundamentals of Transformers.

The pipeline is bank -> build -> sandbox -> grade -> report, with exam and
selfcheck on the side; each stage is a subpackage of this one.
"""

import sys

__version__ = "0.1.0"

# jsonschema, under nbformat, compiles the 38 grammars of rfc3987-syntax when it is imported and that package is
# installed (jupyter-events brings it, with nbgrader): 2 s of CPU in every qkv process that reads or writes a
# notebook, on the 2-core machine of the figures. It serves only the "iri" formats, which no nbformat schema
# checks, so qkv's processes import jsonschema without it.
# (None there is Python's documented "not importable", which typeshed's ModuleType values leave out)
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
