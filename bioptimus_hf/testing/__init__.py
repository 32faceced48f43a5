"""Test doubles shipped with the package (like ``transformers.testing_utils``): a loopback fake Hugging Face
Hub (``fake_hub``) and tiny release directories (``tiny_releases``), used by the test suite and by the
benchmarks, so that neither imports the other."""
