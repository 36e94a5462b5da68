"""The package version, in one place: pyproject.toml reads it (``tool.setuptools.dynamic``) and
``flink-jobgraph --version`` prints it."""

__version__ = "0.1.0"
