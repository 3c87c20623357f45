"""Packs a wrapper library into the .pt2 layout torch writes: <name>/data/aotinductor/model/<x>.wrapper.so + metadata."""
import json
import sys
import zipfile

so, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
    z.writestr("fake/archive_format", "pt2")
    z.write(so, "fake/data/aotinductor/model/cfake.wrapper.so")
    z.writestr("fake/data/aotinductor/model/cfake.wrapper_metadata.json", json.dumps({"AOTI_DEVICE_KEY": "cuda"}))
