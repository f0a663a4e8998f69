"""The package version: the one place it is written.

``pyproject.toml`` reads it when the package is built (``[tool.setuptools.dynamic]`` reads this
assignment without importing anything), ``otel_toolscore.__version__`` re-exports it, and the
Kubernetes manifest's image tag and CHANGELOG.md are checked against it (tests/project/test_project_meta.py).
"""

__version__ = "0.1.0"
