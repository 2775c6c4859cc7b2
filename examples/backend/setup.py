"""Builds example_backend against the coextra installed in the build
environment: its headers are all it needs (nothing to link)."""

import coextra
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "example_backend",
            sources=["src/module.c", "src/cache.c"],
            include_dirs=[coextra.get_include()],
        )
    ],
)
