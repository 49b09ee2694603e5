"""moejit's exception: every refused input names its field."""


class MoejitError(ValueError):
    """A refused input or a failure inside moejit.

    ``field`` names the refused input (``"hidden"``, ``"batch"``, ``"topk_ids"``,
    ``"path"``, ...), or is ``""`` for an error that is not bad input (a kernel
    that fails to build, the CUDA driver).
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field
