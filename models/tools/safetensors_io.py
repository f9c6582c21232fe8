"""Minimal safetensors reader and writer (float32 focused), written for winfer.

File layout (https://github.com/huggingface/safetensors, format description):

    [8 bytes]  N, unsigned 64-bit little-endian: length of the JSON header
    [N bytes]  JSON header, UTF-8; we pad it with spaces so that 8 + N is a multiple of 8
    [rest]     raw tensor data, little-endian, C order

The header maps each tensor name to {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}
(offsets relative to the start of the data section). An optional "__metadata__" entry maps
strings to strings.
"""

import json
import struct

import numpy as np

# safetensors dtype name -> numpy dtype (little-endian)
DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}


def write_safetensors(path, tensors, metadata=None):
    """Write a dict name -> array-like as float32 safetensors. Tensors keep the dict's order."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    arrays = []
    offset = 0
    for name, value in tensors.items():
        array = np.ascontiguousarray(np.asarray(value, dtype="<f4"))
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        arrays.append(array)
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for array in arrays:
            # The array's own buffer, not a tobytes() copy: a VGG's 0.5 GB of weights copied
            # once more cost seconds of page faults per model (tests/parity/references.py).
            f.write(memoryview(array.reshape(-1)).cast("B"))


def read_safetensors(path):
    """Read a safetensors file into a dict name -> numpy array (copies, native dtype).

    Validates the header length, every dtype, shape and offset against the file size.
    The "__metadata__" entry is skipped.
    """
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", raw[:8])
    if 8 + header_len > len(raw):
        raise ValueError(f"{path}: header length {header_len} exceeds the file size")
    header = json.loads(raw[8:8 + header_len].decode("utf-8"))
    data = memoryview(raw)[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _decode_tensor(path, name, entry, data)
    return tensors


def _decode_tensor(path, name, entry, data):
    dtype = entry.get("dtype")
    if dtype not in DTYPES:
        raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dtype!r}")
    shape = [int(d) for d in entry["shape"]]
    begin, end = (int(v) for v in entry["data_offsets"])
    itemsize = np.dtype(DTYPES[dtype]).itemsize
    expected = itemsize * int(np.prod(shape, dtype=np.int64))
    if not 0 <= begin <= end <= len(data) or end - begin != expected:
        raise ValueError(f"{path}: tensor {name!r} has bad data_offsets {[begin, end]} "
                         f"for shape {shape} and dtype {dtype}")
    array = np.frombuffer(data[begin:end], dtype=DTYPES[dtype]).reshape(shape)
    return array.astype(array.dtype.newbyteorder("="), copy=True)
