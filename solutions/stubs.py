"""What a student's unfinished function does: the stub every `implement` problem must fail."""


def not_implemented(*args, **kwargs):
    raise NotImplementedError("not implemented yet")
