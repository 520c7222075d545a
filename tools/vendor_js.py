"""Vendor the book's JavaScript into _vendor/ so the built book needs no CDN and works offline.

MathJax and require.js come from the npm registry (`npm pack`, checked against pinned sha256 sums);
plotly.js is the copy inside the installed `plotly` Python package. _vendor/ is listed in `html_static_path`
(it is not `_static/`, whose every .js jupyter-book would add to every page).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_vendor"
NPM_PACKAGES = {
    # package@version: (sha256 of the tarball, members to extract (prefix), target folder)
    "mathjax@3.2.2": (
        "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09",
        "package/es5/",
        "mathjax",
    ),
    "requirejs@2.3.7": (
        "31f3330c978fb28684622fe71165dc946432cf0210b2ea8a1ca0233e70f2737d",
        "package/require.js",
        "requirejs",
    ),
}


def _npm_pack(spec: str, sha256: str, prefix: str, target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["npm", "pack", spec, "--silent"], cwd=tmp, check=True, capture_output=True, text=True
        )
        tarball = Path(tmp) / out.stdout.strip().splitlines()[-1]
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if digest != sha256:
            sys.exit(f"vendor_js: {spec} has sha256 {digest}, expected {sha256}: refusing to vendor it.")
        staging = Path(tmp) / "staging"
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
            tar.extractall(staging, members=members, filter="data")
        source = staging / prefix.rstrip("/")
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            target.mkdir(parents=True)
            shutil.copy2(source, target / source.name)


def main() -> None:
    for spec, (sha256, prefix, folder) in NPM_PACKAGES.items():
        target = VENDOR / folder
        stamp = target / ".vendored"
        if stamp.is_file() and stamp.read_text() == spec:
            continue
        _npm_pack(spec, sha256, prefix, target)
        stamp.write_text(spec)
    import plotly

    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    (VENDOR / "plotly").mkdir(parents=True, exist_ok=True)
    shutil.copy2(plotly_js, VENDOR / "plotly" / "plotly.min.js")


if __name__ == "__main__":
    main()
