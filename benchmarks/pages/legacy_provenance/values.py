"""The values of ``legacy_provenance/README.md``: how many results files the recovered provenance covers."""

from __future__ import annotations

import json
from pathlib import Path


def values(folder: Path) -> dict:
    """The count of files listed, the folders they lie in, and the dates of the commits that added them."""
    files = json.loads((Path(folder) / "legacy_provenance.json").read_text())["files"]
    folders = sorted({name.split("/", 1)[0] for name in files if "/" in name})
    added = sorted(entry["added_date"] for entry in files.values())
    return {"files": len(files), "folders": len(folders), "first_added": added[0][:10], "last_added": added[-1][:10]}
