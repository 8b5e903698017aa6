"""The package's version, in a module of its own.

The root ``__init__`` re-exports it as ``agentactors.__version__``; the modules that need it (the OTel
recorder's instrumentation scope, a Ray worker's handshake with its driver) import it from here, so none of
them imports the package root — which imports the whole user API, and would close a cycle through them.
Keep it equal to ``version`` in ``pyproject.toml``.
"""

__version__ = "0.1.0"
