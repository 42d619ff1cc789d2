"""Build of readplan's compiled core: one C extension, readplan.records._core (specs/native.md).

Everything else about the package is in pyproject.toml.  Where no C compiler works the build
still succeeds without the extension, and readplan runs its pure-Python kernels (readplan.NATIVE
is then False); READPLAN_REQUIRE_NATIVE=1 makes a failed compile fail the build instead.
"""

from __future__ import annotations

import os
import sys
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The limited API (one wheel for every CPython >= 3.11) covers everything the core uses.
LIMITED = sys.version_info >= (3, 11) and not hasattr(sys, "pypy_version_info")


class OptionalBuildExt(build_ext):
    """Builds the core, and on a compiler failure warns and leaves the pure path in place."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # the compiler's own errors come in several types
            self._give_up(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        if os.environ.get("READPLAN_REQUIRE_NATIVE") == "1":
            raise error
        print(f"readplan: the compiled core was not built ({error}); the pure-Python kernels will "
              "be used", file=sys.stderr)


core = Extension(
    "readplan.records._core",
    sources=sorted(glob("src/readplan/records/csrc/*.c")),
    depends=sorted(glob("src/readplan/records/csrc/*.h")),
    extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    if os.name != "nt"
    else [],
    define_macros=[("Py_LIMITED_API", "0x030B0000")] if LIMITED else [],
    py_limited_api=LIMITED,
)

setup(
    ext_modules=[core],
    cmdclass={"build_ext": OptionalBuildExt},
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if LIMITED else {},
)
