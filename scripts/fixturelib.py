"""Shared by the fixture generators (scripts/gen-fixtures.py, scripts/gen-rng-vectors.py):
writing float32 tensors as a safetensors file (the format tsrnn reads; there is no safetensors
package for Debian's Python)."""
import json
import struct


def write_safetensors(path, tensors, metadata):
    """Writes float32 `tensors` (name -> torch tensor) sorted by name, with string metadata:
    an 8-byte little-endian header length, the JSON header padded with spaces to a multiple
    of 8 bytes, then the row-major little-endian data."""
    header = {"__metadata__": metadata}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        array = tensors[name].detach().numpy().astype("<f4")
        data = array.tobytes(order="C")
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
