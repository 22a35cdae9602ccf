"""Model files of format version 2 (weights/FORMAT.md): the safetensors layout plus checksums.

Written from the format description, independently of the C++ writer, so each checks the other:
`tensor_checksums` holds XXH3-64 (python3-xxhash) of every tensor's bytes as 16 lower-case hex
digits, and `header_checksum` the XXH3-64 of the whole padded header text with its own value
replaced by sixteen zeros.
"""
import json

import xxhash

import safetensors_io

PLACEHOLDER = "0" * 16
KEY = b'"header_checksum":"'


def seal(tensors, metadata):
    """bytes of a version-2 model file: tensors {name: numpy array}, metadata {str: str}."""
    import numpy as np
    sums = {name: xxhash.xxh3_64(np.ascontiguousarray(a).tobytes()).hexdigest() for name, a in tensors.items()}
    meta = dict(metadata)
    meta["format_version"] = "2"
    meta["checksum_algorithm"] = "xxh3_64"
    meta["tensor_checksums"] = json.dumps(sums, separators=(",", ":"))
    meta["header_checksum"] = PLACEHOLDER
    blob = bytearray(safetensors_io.encode(tensors, meta))
    header_len = int.from_bytes(blob[:8], "little")
    header = bytes(blob[8:8 + header_len])
    at = header.index(KEY) + len(KEY)
    digest = xxhash.xxh3_64(header).hexdigest().encode()
    blob[8 + at:8 + at + 16] = digest
    return bytes(blob)


def save_model_file(path, tensors, metadata):
    with open(path, "wb") as f:
        f.write(seal(tensors, metadata))


def verify(path):
    """Raises ValueError unless the version-2 model file at `path` carries correct checksums."""
    with open(path, "rb") as f:
        blob = f.read()
    header_len = int.from_bytes(blob[:8], "little")
    header = blob[8:8 + header_len]
    at = header.index(KEY) + len(KEY)
    stored = header[at:at + 16].decode()
    if xxhash.xxh3_64(header[:at] + PLACEHOLDER.encode() + header[at + 16:]).hexdigest() != stored:
        raise ValueError(f"{path}: header checksum mismatch")
    entries = json.loads(header)
    sums = json.loads(entries.pop("__metadata__")["tensor_checksums"])
    if set(sums) != set(entries):
        raise ValueError(f"{path}: tensor_checksums do not list exactly the tensors")
    data = blob[8 + header_len:]
    for name, e in entries.items():
        begin, end = e["data_offsets"]
        if xxhash.xxh3_64(data[begin:end]).hexdigest() != sums[name]:
            raise ValueError(f"{path}: tensor {name} checksum mismatch")
