"""Figures of an output file (``simengine plot FILE.h5``).

Each ``*_figure`` function takes an open :class:`~simengine.io.reader.Result` and returns a
matplotlib ``Figure`` (or ``None`` when the file lacks what it shows); :func:`plot_file` saves them
all as PNGs (and an animated GIF of the snapshots when Pillow is installed).

Field runs: ``field.png`` (latest φ on physical axes x = i·h), ``observables.png`` (F, mass drift,
L(t) with the coarsening exponent fitted over at least a decade of t after separation, else a note,
and a t^{1/3} guide), ``structure_factor.png`` (S(k, t) at
the snapshot times), ``snapshots.png`` (+ ``snapshots.gif``), ``phi_histogram.png``.
Network runs: ``distance_histogram.png``, ``vertex_metrics.png``, ``degree_distribution.png``,
``metric_vs_degree.png``, ``clustering_vs_degree.png`` (runs with the ``clustering`` statistic),
``betweenness.png`` (when the run computed betweenness). Degrees come from ``/vertex/degree`` when
the file has it, otherwise the graph is rebuilt from the stored scenario (generator, or the graph
file if it is still at its path) and checked against the file's vertex and arc counts (and content
hash where possible).
"""
from __future__ import annotations

from pathlib import Path

from .common import (LENGTH_UNIT, SPACE, TIME_LABEL, Result, _mpl, color_range,  # noqa: F401
                     readable_log_axis)
from .coarsening import coarsening_figure  # noqa: F401
from .field import (equilibrium_phases, field_figure, observables_figure,  # noqa: F401
                    phi_histogram_figure, snapshot_gif, snapshot_montage_figure,
                    structure_factor_figure)
from .network import (betweenness_figure, clustering_vs_degree_figure,  # noqa: F401
                      degree_distribution_figure, distance_histogram_figure, graph_degrees,
                      metric_vs_degree_figure, plot_bin_means, vertex_metrics_figure)

FORMATS = ("png", "svg", "pdf")


def plot_file(path, out_dir=None, gif=True, log=None, fmt="png", dpi=120) -> list:
    """Write the figures for ``path`` into ``out_dir`` (default ``<stem>_plots/`` beside it).

    Returns the paths written. ``gif=False`` skips the animated snapshot GIF; ``log`` (a callable
    taking a message) hears about figures that cannot be drawn, e.g. degrees without a graph.
    ``fmt``: png | svg | pdf; ``dpi``: resolution of PNGs (and of raster parts of SVG/PDF).
    """
    path = Path(path)
    if fmt not in FORMATS:
        from ..errors import UserError

        raise UserError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if path.suffix.lower() == ".csv":   # a sweep summary (simengine sweep --collect)
        from ..summary_plot import plot_summary

        return plot_summary(path, out_dir, fmt=fmt, dpi=dpi)
    from ..io.output_write import check_target, prepare_dir, save_figure

    out = prepare_dir(Path(out_dir) if out_dir else path.with_name(path.stem + "_plots"),
                      (path,), "plot folder")
    plt = _mpl()
    log = log or (lambda msg: None)
    written = []

    def save(name, fig):
        if fig is not None:
            written.append(save_figure(fig, out / f"{name}.{fmt}", dpi, (path,)))
            plt.close(fig)

    with Result(path) as r:
        if r.kind == "field":
            save("field", field_figure(r))
            save("observables", observables_figure(r))
            save("coarsening", coarsening_figure(r))
            sk = structure_factor_figure(r)
            if sk is None and not r.snapshot_fits() and "observables/structure_factor" \
                    not in r.file:
                from ..io.file_checks import read_limit
                from ..machine import fmt_bytes

                log(f"{path}: structure factor figure skipped: S(k) needs whole snapshots, "
                    f"larger than the read cap ({fmt_bytes(read_limit())}; "
                    f"SIMENGINE_READ_LIMIT, or output.structure_factor: true stores S(k))")
            save("structure_factor", sk)
            save("snapshots", snapshot_montage_figure(r, log=log))
            save("phi_histogram", phi_histogram_figure(r))
            if gif:
                check_target(out / "snapshots.gif", (path,), "figure")  # PIL writes it itself
                p = snapshot_gif(r, out / "snapshots.gif")
                if p is not None:
                    written.append(p)
        else:
            save("distance_histogram", distance_histogram_figure(r))
            save("vertex_metrics", vertex_metrics_figure(r))
            degrees, how = graph_degrees(r)
            save("betweenness", betweenness_figure(r, degrees))
            if degrees is None:
                log(f"{path}: no degree figures: {how}")
            else:
                save("degree_distribution", degree_distribution_figure(r, degrees, log))
                save("metric_vs_degree", metric_vs_degree_figure(r, degrees))
                save("clustering_vs_degree", clustering_vs_degree_figure(r, degrees))
    return written
