"""Reference solutions used by the autograder.

``numpy_ref`` and ``torch_ref`` implement the same attention building blocks
(same names, same semantics) on NumPy arrays and PyTorch tensors; ``counting``
gives the closed-form parameter, score and FLOP counts the exercises ask for.
"""
