"""Build hook for the Rust extension ``bioptimus_hf._qikfind``; metadata lives in setup.cfg.

Where cargo is missing the extension is skipped (``optional=True``) and qik-find runs its pure-Python
backend. ``BIOPTIMUS_REQUIRE_QIKFIND=1`` (set by ``scripts/build_wheel.sh``) makes a failed Rust build fail
the install instead, so that a distributed wheel always carries the extension. On our offline machines
``scripts/cargo_env.sh`` points cargo at Debian's packaged crates.
"""

import os

from setuptools import find_namespace_packages, setup
from setuptools_rust import Binding, RustExtension


setup(
    # The repository's configs/ ships inside the package as bioptimus_hf/configs (package data, setup.cfg), so
    # that an installed `bioptimus pretrain demo_minilm` finds it (bioptimus_hf/utils/config_files.py).
    # Namespace packages: the data-only folders (templates/, metrics/span_f1/, configs/accelerate/) are packages
    # too, else setuptools warns that their files would be ignored.
    packages=[
        *find_namespace_packages(include=["bioptimus_hf", "bioptimus_hf.*"], exclude=["*.__pycache__"]),
        "bioptimus_hf.configs",
        "bioptimus_hf.configs.accelerate",
    ],
    package_dir={"bioptimus_hf.configs": "configs"},
    rust_extensions=[
        RustExtension(
            "bioptimus_hf._qikfind",
            # The binding crate (PyO3); the qikfind library crate it wraps is rust/ (one cargo workspace).
            path="rust/bindings/python/Cargo.toml",
            binding=Binding.PyO3,
            optional=os.environ.get("BIOPTIMUS_REQUIRE_QIKFIND") != "1",
            # Release profile even for editable installs: a debug build scans ~20x slower.
            debug=False,
        )
    ],
    zip_safe=False,
)
