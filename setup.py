"""The optional C accelerator of harness, built with the package when a compiler is there.

Everything else about the project is in pyproject.toml. ``optional=True``: when the
extension does not build (no compiler, no Python headers), the install goes on and
harness runs on its pure-Python path, which the whole test suite covers
(docs/performance.md, "The optional C walk").
"""

from setuptools import Extension, setup  # type: ignore[import-untyped]  # no stubs in the test extra

setup(
    ext_modules=[
        Extension("harness.events._typewalk", ["src/harness/events/_typewalk.c"], optional=True),
    ]
)
