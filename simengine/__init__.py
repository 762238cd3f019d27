"""simengine: Cahn–Hilliard field and shortest-path network simulations from YAML scenarios."""
__version__ = "0.1.0"


def open(path):  # noqa: A001 - deliberate: simengine.open(path) for analysis scripts
    """Open a simengine HDF5 output for analysis (see :class:`simengine.io.reader.Result`)."""
    from .io.reader import Result

    return Result(path)
