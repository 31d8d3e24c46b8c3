"""Build the optional C accelerator of harness (``harness.events._typewalk``) in place.

``make accel`` runs this. harness works, and is tested, without it: the accelerator only
lets ``encode_lossless`` prove a plain value in one C walk (docs/performance.md).
``HARNESS_ACCEL=0`` turns a built one off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Distribution, Extension  # type: ignore[import-untyped]  # no stubs in the test extra

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    os.chdir(ROOT)
    extension = Extension(
        "harness.events._typewalk",
        ["src/harness/events/_typewalk.c"],
        extra_compile_args=["-O2", "-Wall", "-Werror"],
    )
    dist = Distribution({"name": "harness-accel", "ext_modules": [extension], "package_dir": {"": "src"}})
    build = dist.get_command_obj("build_ext")
    build.inplace = True
    build.build_temp = str(ROOT / "build" / "accel")
    build.ensure_finalized()
    try:
        build.run()
    except Exception as error:  # distutils' CompileError / LinkError, a missing compiler
        sys.exit(f"make accel: the optional C walk did not build ({type(error).__name__}: {error})")
    print(f"built {build.get_ext_fullpath(extension.name)}", file=sys.stderr)


if __name__ == "__main__":
    main()
