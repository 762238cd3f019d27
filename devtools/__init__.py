"""Developer tools that are not part of the engine (nothing in ``simengine`` imports them)."""
