"""The one exception type users see: a one-line message naming the file and what is wrong."""


class QkvError(Exception):
    """An error in the user's input; `str(err)` is the one line the CLI prints."""

    def __init__(self, where: str, what: str):
        self.where = where
        self.what = what
        super().__init__(f"{where}: {what}" if where else what)
