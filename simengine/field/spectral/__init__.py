"""The semi-implicit spectral integrator of the field engine (``solver.integrator: spectral``).

* :mod:`.transforms` — the transform that diagonalises each boundary's Laplacian (FFT, DCT-II,
  DST-I) and its symbol (``fd``: the stencil's own eigenvalues; ``exact``: −k²);
* :mod:`.scheme` — stabilised SBDF2 (a one-step second-order start), xp-generic;
* :mod:`.gpu` — its pointwise work as CuPy elementwise kernels;
* :mod:`.energy` — mass, free energy, min, max on the solver's device;
* :mod:`.solver` — :class:`SpectralFieldSolver`, the runner's solver interface;
* :mod:`.rules` — what the plan asks: ``can_run``, ``describe``, ``memory_bytes``.

The adaptive controller shared with the stencil integrators is :mod:`simengine.field.adaptive`;
the scheme, its order and stability are in docs/field.md ("Spectral integrator").
"""
