"""The semi-implicit spectral integrator of the field engine (``solver.integrator: spectral``).

* :mod:`.transforms` — the transform that diagonalises each boundary's Laplacian (FFT, DCT-II,
  DST-I) and its symbol (``fd``: the stencil's own eigenvalues; ``exact``: −k²);
* :mod:`.scheme` — stabilised SBDF2 (a one-step second-order start), xp-generic: the reference
  form, run on MPI slabs and on grids of ≥ 2³² cells;
* :mod:`.gpu_step` — the same scheme at the transform's cost on one process: buffers allocated
  once, three fused kernels, the error estimate and the energy in one reduction; its kernels in
  CUDA C (:mod:`.gpu_kernels`, cuFFT plans for periodic grids) or numba (:mod:`.cpu_kernels`,
  ``scipy.fft`` with the run's threads);
* :mod:`.gpu` — :mod:`.scheme`'s pointwise work as CuPy elementwise kernels (its GPU form);
* :mod:`.slabs` — the transforms and reductions on slabs of axis 0, one per MPI rank (NumPy or
  CuPy; the transpose through ``alltoall``, staged through host memory on GPUs);
* :mod:`.energy` — mass, free energy, min, max on the solver's device (unfused forms);
* :mod:`.solver` — :class:`SpectralFieldSolver`, the runner's solver interface;
* :mod:`.rules` — what the plan asks: ``can_run``, ``describe``, ``memory_bytes``.

The adaptive controller shared with the stencil integrators is :mod:`simengine.field.adaptive`;
the scheme, its order and stability are in docs/field.md ("Spectral integrator").
"""
