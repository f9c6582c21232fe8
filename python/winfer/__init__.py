"""winfer: a small CNN inference engine (im2win convolution), from Python.

    import numpy as np, winfer

    m = winfer.Model("models/fashion/fashion_resnet.yaml")   # .yaml (+ .safetensors) or .onnx
    s = m.session(batch=8)                                   # threads=None: this process's cores
    x = np.zeros(s.input_shape, np.float32)                  # float32, C-contiguous, NCHW
    y = s.run(x)                                             # read in place; y owns its memory
    s.run(x, out=y)                                          # or written into your array
    winfer.classify(m, ["models/fashion/examples/sneaker.png"], top=3)

The GIL is released while the engine runs: N threads with N sessions run in parallel. Errors are
winfer.Error subclasses carrying the engine's message. docs/EMBEDDING.md, "Python", says more.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Optional, Sequence, Union

from ._errors import (
    DeviceError,
    Error,
    InternalError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    OutOfMemoryError,
    ParseError,
    ShapeError,
    UnsupportedError,
)
from ._winfer import Model, Session, conv_algorithms, default_threads
from . import _errors, _winfer

__version__ = "0.1.0"


class Prediction(NamedTuple):
    """One of an image's top classes: its label (``"class N"`` when the model has no labels),
    its probability (softmax of the logits, or the output itself after a softmax layer) and its
    class index."""

    label: str
    probability: float
    index: int


ImageInput = Union[str, "os.PathLike[str]", bytes, Any]


def _image_item(item: ImageInput) -> Any:
    """A path as str, bytes as they are, anything else as a C-contiguous uint8 array."""
    if isinstance(item, (str, bytes)):
        return item
    if isinstance(item, os.PathLike):
        return os.fspath(item)
    import numpy as np

    array = np.asarray(item)
    if array.dtype != np.uint8:
        raise TypeError(
            f"classify: an image array must be uint8 pixels (HxW, HxWx1, HxWx3 or HxWx4), "
            f"got dtype {array.dtype}"
        )
    return np.ascontiguousarray(array)


def classify(
    model: Union[Model, Session, str, "os.PathLike[str]"],
    images: Sequence[ImageInput],
    top: int = 5,
    *,
    batch: Optional[int] = None,
    threads: Optional[int] = None,
    conv: str = "im2win",
    device: str = "cpu",
    preprocess: Optional[str] = None,
    labels: Union[str, Sequence[str], None] = None,
) -> list[list[Prediction]]:
    """Classifies images with a model's own preprocessing and labels, as ``winfer classify`` does
    (the same decoding, resize, crop and normalization, the same softmax and top-k, from the
    same engine code), and returns per image its ``top`` classes, most probable first.

    model: a Model, a model path, or a Session (reused: its batch is the batch size; make one
        per thread). A Model or path gets a session of ``batch`` images per run (None: up to 8,
        as the CLI), ``threads`` (None: this process's cores), ``conv`` and ``device``.
    images: paths (any format the CLI reads: PNG, JPEG, BMP, GIF, PGM/PPM, ...), the bytes of
        such files, or uint8 pixel arrays (HxW gray, HxWx3 RGB, HxWx4 RGBA; e.g.
        ``np.asarray(PIL.Image.open(f))``).
    preprocess: ``"imagenet"``, ``"none"`` or a .yaml file in place of the model's own
        preprocessing (an ONNX file has none); labels: a labels file or a list of class names
        in place of the model's.

    An image that cannot be read or decoded raises (winfer.NotFoundError, ParseError, ...)
    naming it; nothing is returned for the others then.
    """
    items = [_image_item(image) for image in images]
    if isinstance(model, Session):
        session = model
    else:
        if not isinstance(model, Model):
            model = Model(model)
        if batch is None:
            batch = max(1, min(8, len(items)))
        session = model.session(batch=batch, threads=threads, conv=conv, device=device)
    if not items:
        return []
    if isinstance(labels, (list, tuple)):
        labels = [str(label) for label in labels]
    rows = _winfer._classify(session, items, top, preprocess or "", labels)
    return [[Prediction(*p) for p in row] for row in rows]


__all__ = [
    "Model",
    "Session",
    "Prediction",
    "classify",
    "conv_algorithms",
    "default_threads",
    *_errors.__all__,
]
