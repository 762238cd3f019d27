"""The XDMF description (``<stem>.xdmf``) of a field output's snapshot series.

ParaView and VisIt open it directly: a temporal collection of uniform grids (``3DCoRectMesh``,
origin 0 and the grid spacing on every axis; 1D and 2D grids are given leading extents of 1), one
per snapshot with its time, whose node attribute ``phi`` is a hyperslab of ``/fields/phi`` in the
HDF5 index (XDMF reads it through the virtual dataset like any HDF5 reader).
"""
from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from .durable import write_atomic


def xdmf_text(h5_name, shape, dtype, spacing, times, dataset="/fields/phi") -> str:
    """The XML for a series of ``len(times)`` snapshots of grid ``shape`` stored at ``dataset``."""
    shape = tuple(int(n) for n in shape)
    dims3 = (1,) * (3 - len(shape)) + shape
    dtype = np.dtype(dtype)
    count = len(times)
    dims = " ".join(map(str, dims3))
    full = " ".join(map(str, (count, *shape)))
    block = " ".join(map(str, (1, *shape)))
    ones = " ".join("1" for _ in range(len(shape) + 1))
    zeros = " ".join("0" for _ in shape)
    h = f"{float(spacing)!r}"
    src = quoteattr(f"{h5_name}:{dataset}")[1:-1]
    lines = ['<?xml version="1.0" ?>', '<!DOCTYPE Xdmf SYSTEM "Xdmf.dtd" []>',
             '<Xdmf Version="2.0">', ' <Domain>',
             '  <Grid Name="phi" GridType="Collection" CollectionType="Temporal">']
    for i, t in enumerate(times):
        lines += [
            f'   <Grid Name="snapshot {i}" GridType="Uniform">',
            f'    <Time Value="{float(t)!r}"/>',
            f'    <Topology TopologyType="3DCoRectMesh" Dimensions="{dims}"/>',
            '    <Geometry GeometryType="ORIGIN_DXDYDZ">',
            '     <DataItem Dimensions="3" NumberType="Float" Precision="8" Format="XML">0 0 0</DataItem>',
            f'     <DataItem Dimensions="3" NumberType="Float" Precision="8" Format="XML">{h} {h} {h}</DataItem>',
            '    </Geometry>',
            '    <Attribute Name="phi" AttributeType="Scalar" Center="Node">',
            f'     <DataItem ItemType="HyperSlab" Dimensions="{dims}" Type="HyperSlab">',
            f'      <DataItem Dimensions="3 {len(shape) + 1}" Format="XML">{i} {zeros} {ones} {block}</DataItem>',
            f'      <DataItem Dimensions="{full}" NumberType="Float" Precision="{dtype.itemsize}" '
            f'Format="HDF">{src}</DataItem>',
            '     </DataItem>',
            '    </Attribute>',
            '   </Grid>']
    lines += ['  </Grid>', ' </Domain>', '</Xdmf>', '']
    return "\n".join(lines)


def write_xdmf(path, h5_path, shape, dtype, spacing, times):
    """Write ``path`` (atomically; not fsynced: it is rewritten from the index at every commit)
    for the snapshots of ``h5_path`` (referred to by file name)."""
    text = xdmf_text(Path(h5_path).name, shape, dtype, spacing, times)
    write_atomic(path, text.encode(), sync=False)
