"""The offline build backend (_sluice_build.py): the wheel holds the package and a RECORD that
matches it, the editable wheel a .pth naming the source tree, the sdist the sources; the
version in pyproject.toml is the package's __version__."""
from __future__ import annotations

import base64
import hashlib
import os
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import _sluice_build as backend  # noqa: E402
import sluice  # noqa: E402


class BackendTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_wheel_has_the_package_and_a_true_record(self) -> None:
        name = backend.build_wheel(self.tmp.name)
        self.assertEqual(name, "sluice_client-%s-py3-none-any.whl" % sluice.__version__)
        with zipfile.ZipFile(os.path.join(self.tmp.name, name)) as z:
            names = set(z.namelist())
            for f in ("sluice/__init__.py", "sluice/client.py", "sluice/py.typed"):
                self.assertIn(f, names)
            self.assertFalse(any("__pycache__" in n or n.startswith("tests/") for n in names))
            dist = "sluice_client-%s.dist-info/" % sluice.__version__
            meta = z.read(dist + "METADATA").decode()
            self.assertIn("Name: sluice-client\n", meta)
            self.assertIn("Version: %s\n" % sluice.__version__, meta)
            rows = [r.split(",") for r in z.read(dist + "RECORD").decode().splitlines()]
            self.assertEqual({r[0] for r in rows}, names)
            for path, digest, size in rows:
                if path.endswith("RECORD"):
                    continue
                data = z.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                self.assertEqual((digest, int(size)), ("sha256=" + want.decode(), len(data)))

    def test_editable_wheel_points_at_the_sources(self) -> None:
        name = backend.build_editable(self.tmp.name)
        with zipfile.ZipFile(os.path.join(self.tmp.name, name)) as z:
            pth = [n for n in z.namelist() if n.endswith(".pth")]
            self.assertEqual(len(pth), 1)
            self.assertEqual(z.read(pth[0]).decode().strip(), ROOT)

    def test_sdist_has_the_sources(self) -> None:
        name = backend.build_sdist(self.tmp.name)
        with tarfile.open(os.path.join(self.tmp.name, name)) as t:
            names = set(t.getnames())
        base = name[:-len(".tar.gz")]
        for f in ("PKG-INFO", "pyproject.toml", "_sluice_build.py", "sluice/client.py",
                  "tests/test_client.py"):
            self.assertIn(base + "/" + f, names)

    def test_nothing_to_download(self) -> None:
        self.assertEqual(backend.get_requires_for_build_wheel(), [])
        self.assertEqual(backend.get_requires_for_build_editable(), [])


if __name__ == "__main__":
    unittest.main()
