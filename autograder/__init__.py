"""qkv: autograded exercises and exam prep for the fundamentals of Transformers.

The pipeline is bank -> build -> sandbox -> grade -> report, with exam and
selfcheck on the side; each stage is a subpackage of this one.
"""

__version__ = "0.1.0"
