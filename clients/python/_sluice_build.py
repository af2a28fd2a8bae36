"""A PEP 517 build backend in the standard library alone, so that `pip install clients/python`
(and `pip install -e`, PEP 660) work with no network: setuptools' backend needs `wheel` and
pip's isolated build would download both. It packs the `sluice` package as it is (pure Python,
no compilation) into a py3-none-any wheel, or an sdist.

Name, version, summary and Python requirement come from pyproject.toml's [project] table."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "sluice"
SDIST_FILES = ["pyproject.toml", "README.md", "_sluice_build.py"]
Settings = Optional[Dict[str, Any]]  # PEP 517 config_settings (unused)


def _project() -> Dict[str, str]:
    """The [project] strings this backend uses (tomllib where it exists: Python 3.11+)."""
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            table = tomllib.load(f)["project"]
        return {k: str(v) for k, v in table.items() if isinstance(v, str)}
    except ImportError:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        section = text.split("[project]", 1)[1].split("\n[", 1)[0]
        return dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', section, re.M))


def _dist() -> Tuple[str, str, Dict[str, str]]:
    p = _project()
    return re.sub(r"[-_.]+", "_", p["name"]).lower(), p["version"], p


def _metadata() -> str:
    _, version, p = _dist()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + version,
             "Summary: " + p.get("description", ""),
             "Requires-Python: " + p.get("requires-python", ">=3.8"),
             "License: Apache-2.0", "Description-Content-Type: text/markdown", ""]
    readme = os.path.join(HERE, p.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n" + body


def _package_files() -> List[str]:
    """Paths of the package's files, relative to HERE, sorted (a reproducible wheel)."""
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in files:
            if f.endswith((".py", ".typed")):
                out.append(os.path.relpath(os.path.join(root, f), HERE))
    return sorted(out)


class _Wheel:
    """A wheel being written: every file also goes into RECORD."""

    def __init__(self, path: str) -> None:
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record: List[str] = []

    def add(self, arcname: str, data: bytes) -> None:
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self, dist_info: str) -> None:
        record = dist_info + "/RECORD"
        self.record.append(record + ",,")
        self.zip.writestr(zipfile.ZipInfo(record, date_time=(2020, 1, 1, 0, 0, 0)),
                          "\n".join(self.record) + "\n")
        self.zip.close()


def _dist_info_files() -> Dict[str, bytes]:
    return {
        "METADATA": _metadata().encode("utf-8"),
        "WHEEL": b"Wheel-Version: 1.0\nGenerator: sluice-build\nRoot-Is-Purelib: true\n"
                 b"Tag: py3-none-any\n",
        "top_level.txt": (PACKAGE + "\n").encode(),
    }


def _build(wheel_directory: str, editable: bool) -> str:
    name, version, _ = _dist()
    filename = "%s-%s-py3-none-any.whl" % (name, version)
    dist_info = "%s-%s.dist-info" % (name, version)
    w = _Wheel(os.path.join(wheel_directory, filename))
    if editable:  # PEP 660: a .pth naming this source tree
        w.add("__editable__.%s.pth" % name, (HERE + "\n").encode("utf-8"))
    else:
        for rel in _package_files():
            with open(os.path.join(HERE, rel), "rb") as f:
                w.add(rel.replace(os.sep, "/"), f.read())
    for fname, data in _dist_info_files().items():
        w.add(dist_info + "/" + fname, data)
    w.close(dist_info)
    return filename


# --- PEP 517 / PEP 660 hooks -----------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Settings = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Settings = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Settings = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Settings = None) -> str:
    name, version, _ = _dist()
    dist_info = "%s-%s.dist-info" % (name, version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for fname, data in _dist_info_files().items():
        with open(os.path.join(metadata_directory, dist_info, fname), "wb") as f:
            f.write(data)
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Settings = None,
                metadata_directory: Optional[str] = None) -> str:
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory: str, config_settings: Settings = None,
                   metadata_directory: Optional[str] = None) -> str:
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory: str, config_settings: Settings = None) -> str:
    name, version, _ = _dist()
    base = "%s-%s" % (name, version)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(arcname: str, data: bytes) -> None:
            info = tarfile.TarInfo(base + "/" + arcname)
            info.size, info.mode, info.mtime = len(data), 0o644, 1577836800
            tar.addfile(info, io.BytesIO(data))
        add("PKG-INFO", _metadata().encode("utf-8"))
        rels = SDIST_FILES + _package_files()
        tests = os.path.join(HERE, "tests")
        if os.path.isdir(tests):
            rels += sorted(os.path.join("tests", f) for f in os.listdir(tests) if f.endswith(".py"))
        for rel in rels:
            full = os.path.join(HERE, rel)
            if os.path.exists(full):
                with open(full, "rb") as f:
                    add(rel.replace(os.sep, "/"), f.read())
    return base + ".tar.gz"
