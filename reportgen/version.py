"""The package version, in a leaf module any part of the package may import."""
__version__ = "0.1.0"
