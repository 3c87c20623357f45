"""aotirt's version (recorded in every package it compiles, as metadata "aotirt_version")."""
__version__ = "0.1.0"
