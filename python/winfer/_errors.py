"""The exceptions winfer raises: one class per engine error code (engine/include/winfer/status.h).

Each carries the engine's message unchanged (it names the file, line, layer or tensor at fault)
and also derives from the builtin exception a Python user would catch for it, so that
``except FileNotFoundError`` or ``except ValueError`` work as expected.
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every error winfer raises. ``str(e)`` is the engine's message; ``e.code``
    the engine's error code name (``"not found"``, ``"shape mismatch"``, ...)."""

    code: str = "error"

    @property
    def message(self) -> str:
        """The engine's message (the same as ``str(e)``)."""
        return str(self.args[0]) if self.args else ""

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(Error, ValueError):
    """A bad value: an option, an argument, tensor data (engine code kInvalidArgument). Also
    raised by a second run of a session that is running on another thread."""

    code = "invalid argument"


class NotFoundError(Error, FileNotFoundError):
    """A missing file, tensor, layer, op or output name (kNotFound)."""

    code = "not found"


class IoError(Error, OSError):
    """Reading or writing a file failed (kIoError)."""

    code = "I/O error"


class ParseError(Error, ValueError):
    """YAML, ONNX, npy or safetensors syntax (kParseError)."""

    code = "parse error"


class ShapeError(Error, ValueError):
    """Shapes disagree: an input of another shape than the session's, a weight of the wrong
    shape in a model file (kShapeMismatch)."""

    code = "shape mismatch"


class UnsupportedError(Error, NotImplementedError):
    """A valid request the engine cannot serve (yet), or not in this build, e.g. an ONNX
    operator it does not have (kUnsupported)."""

    code = "unsupported"


class InternalError(Error, RuntimeError):
    """A bug in winfer (kInternal): please report it."""

    code = "internal error"


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed, or would not fit in the memory available or the memory_budget
    (kOutOfMemory)."""

    code = "out of memory"


class DeviceError(Error, RuntimeError):
    """A CUDA device failed, is absent, or its driver is (kDeviceError)."""

    code = "device error"


__all__ = [
    "Error",
    "InvalidArgumentError",
    "NotFoundError",
    "IoError",
    "ParseError",
    "ShapeError",
    "UnsupportedError",
    "InternalError",
    "OutOfMemoryError",
    "DeviceError",
]
