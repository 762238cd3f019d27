"""The package version (its own module, so that writers can stamp files without importing the
package's lazy Python API)."""
__version__ = "0.1.0"
