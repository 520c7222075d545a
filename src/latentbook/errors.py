"""Errors raised by latentbook. Each names what was wrong and what to do about it.

Every class is a ``LatentbookError`` and also the builtin exception a caller would expect
(``ValueError``, ``FileNotFoundError``, ...), so ``except ValueError`` keeps working.
"""

from __future__ import annotations


class LatentbookError(Exception):
    """Base class of every error latentbook raises on purpose."""


class UnknownModelError(LatentbookError, KeyError):
    """A model name that is neither in the zoo, nor a local folder, nor a cached hub id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnsafePathError(LatentbookError, ValueError):
    """A name or path that would leave the folders latentbook may read or write."""


class ModelUnavailableError(LatentbookError, FileNotFoundError):
    """No loadable weights for this name here: not installed, no such folder, not in the hub cache, or no safetensors."""


class IntegrityError(LatentbookError, ValueError):
    """A file whose checksum, size or schema does not match what was expected."""


class CaptureFileError(LatentbookError, FileNotFoundError):
    """A capture file that is missing, truncated, corrupt or of another schema."""


class InvalidInputError(LatentbookError, ValueError):
    """Arguments of the wrong kind or out of range (prompts, layers, batch sizes...)."""


class NonFiniteActivationError(LatentbookError, FloatingPointError):
    """NaN or Inf in the residual stream: names the depth and the count.

    ``counts`` maps each affected depth to its number of non-finite values, shallowest first;
    ``depth`` and ``count`` are the first of them (where the overflow started).
    """

    def __init__(self, message: str, counts: dict[int | str, int] | None = None):
        super().__init__(message)
        self.counts = dict(counts or {})
        self.depth, self.count = next(iter(self.counts.items()), (None, 0))


class UntrustedCodeError(LatentbookError, PermissionError):
    """A model folder that needs its own Python code to load, while trust_remote_code is off."""


class CheckpointMismatchError(LatentbookError, ValueError):
    """A checkpoint written for another model, prompt set or setting than the run resuming it."""


class OutputExistsError(LatentbookError, FileExistsError):
    """An output path that already holds a finished file, which a run would overwrite without being asked."""


class LockedError(LatentbookError, BlockingIOError):
    """An output or cache entry that another latentbook process holds locked right now."""


class RendezvousError(LatentbookError, TimeoutError):
    """A distributed run whose ranks never all joined (``RANK`` / ``WORLD_SIZE`` without the other ranks)."""
