"""Minimal, independent safetensors reader and writer (struct + json + numpy only).

Layout: u64 little-endian header length N, N bytes of JSON (padded with spaces to a multiple of
8), then the raw little-endian tensor bytes at data_offsets relative to the end of the header.
"""
import json
import struct

import numpy as np

DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_NAME_OF_DTYPE = {v: k for k, v in DTYPES.items()}


class SafetensorsError(ValueError):
    pass


def encode(tensors, metadata=None):
    """bytes of a safetensors file. tensors: {name: numpy array} (order kept); metadata: {str: str}."""
    header, chunks, offset = {}, [], 0
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise SafetensorsError(f"metadata must map str to str, got {k!r}: {type(v).__name__}")
        header["__metadata__"] = dict(metadata)
    for name, array in tensors.items():
        if name == "__metadata__":
            raise SafetensorsError("tensor name __metadata__ is reserved")
        array = np.asarray(array)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype not in _NAME_OF_DTYPE:
            raise SafetensorsError(f"{name}: unsupported dtype {array.dtype}")
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        header[name] = {"dtype": _NAME_OF_DTYPE[dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save_file(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(encode(tensors, metadata))


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise SafetensorsError("duplicate names in header")
    return dict(pairs)


def decode(blob):
    """(tensors {name: numpy array}, metadata {str: str}) from safetensors bytes, validated."""
    if len(blob) < 8:
        raise SafetensorsError("file shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise SafetensorsError(f"header length {n} exceeds file size {len(blob)}")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if info.get("dtype") == "BF16":  # no numpy dtype: widened to float32 (exact)
            shape, (begin, end) = info["shape"], info["data_offsets"]
            if not 0 <= begin <= end <= len(data) or int(np.prod(shape, dtype=np.int64)) * 2 != end - begin:
                raise SafetensorsError(f"{name}: offsets {begin}..{end} do not hold BF16 shape {shape}")
            halves = np.frombuffer(data[begin:end], dtype="<u2").astype(np.uint32) << 16
            tensors[name] = halves.view(np.float32).reshape(shape).copy()
            continue
        dtype = DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise SafetensorsError(f"{name}: unknown dtype {info.get('dtype')!r}")
        shape = info["shape"]
        begin, end = info["data_offsets"]
        if any((not isinstance(s, int)) or s < 0 for s in shape):
            raise SafetensorsError(f"{name}: bad shape {shape}")
        if not 0 <= begin <= end <= len(data):
            raise SafetensorsError(f"{name}: offsets {begin}..{end} outside data of {len(data)} bytes")
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != end - begin:
            raise SafetensorsError(f"{name}: {end - begin} bytes do not hold shape {shape} of {dtype}")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape).copy()
    return tensors, metadata


def load_file(path):
    with open(path, "rb") as f:
        return decode(f.read())
