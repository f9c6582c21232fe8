"""The ONNX files of the parity tests: the references' model exported by torch, cached on disk.

parity.py --onnx OPSET runs an ONNX file instead of the zoo YAML. The file is written by
models/tools/export_onnx.py's export() from the same torch model as the references (the
model, seed and recipe of references.py), so the weights in the file are the weights the torch
outputs were computed with; torch folds BatchNorm into the convolutions while exporting.

Files live next to the references, in WORK_DIR/cache:

    MODEL.seedS.<references digest>.onnxOPSET.<variant>.<export digest>.onnx

variant: static-NxCxHxW (every dim fixed: one file per batch) or dynamic-AXES.NxCxHxW (the
traced shape; AXES the symbolic dims). The references digest changes with torch, torchvision and
the recipe (references.py then deletes the old files with the old references); the export digest
is a hash of export_onnx.py: the model's exports made with another one are deleted when a new
one is written. Exports are made under the references' lock and renamed into place, as references are.
"""

import glob
import hashlib
import os
import sys
import time

from references import TOOLS, locked, reference_model, shape_text, write_atomically

sys.path.insert(0, TOOLS)


def export_digest():
    with open(os.path.join(TOOLS, "export_onnx.py"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:8]


class OnnxExports:
    """ONNX exports of one References' model at one opset, static or with dynamic axes."""

    def __init__(self, refs, opset, axes=()):
        self.refs, self.opset, self.axes = refs, opset, tuple(axes)

    def variant(self, shape):
        if self.axes:
            return f"dynamic-{'-'.join(self.axes)}.{shape_text(shape)}"
        return f"static-{shape_text(shape)}"

    def _prefix(self, shape):
        return f"{self.refs.stem}onnx{self.opset}.{self.variant(shape)}."

    def path(self, shape):
        """The file of the export traced at SHAPE (NCHW)."""
        return f"{self._prefix(shape)}{export_digest()}.onnx"

    def ensure(self, shape, threads=1):
        """Export at SHAPE unless cached; returns the seconds spent (0.0: cached). Raises
        export_onnx.ExportRefused when torch cannot export the model so."""
        path = self.path(shape)
        if os.path.exists(path):
            return 0.0
        start = time.time()
        with locked(self.refs.lock_path):
            if not os.path.exists(path):  # another test may have written it while we waited
                self._export(shape, path, threads)
        return time.time() - start

    def _export(self, shape, path, threads):
        import torch
        from export_onnx import export
        torch.set_num_threads(threads)
        net = reference_model(self.refs.model, self.refs.seed)
        seconds = []
        write_atomically(path, lambda temporary: seconds.append(
            export(net, temporary, self.opset, shape, self.axes)))
        # Exports of this model made by another export_onnx.py, any opset and variant.
        for stale in glob.glob(glob.escape(f"{self.refs.stem}onnx") + "*.onnx"):
            if not stale.endswith(f".{export_digest()}.onnx"):
                os.remove(stale)
        print(f"  exported {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.0f} MB) in "
              f"{seconds[0]:.1f} s", flush=True)
