"""A binary min-heap on two parallel arrays (keys, values) for numba code (Dijkstra, Prim)."""
from numba import njit


@njit(cache=True, inline="always")
def heap_push(hk, hv, size, key, value):
    """Insert (key, value) into the heap of ``size`` entries; returns the new size."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] > key:
            hk[i] = hk[p]
            hv[i] = hv[p]
            i = p
        else:
            break
    hk[i] = key
    hv[i] = value
    return size + 1


@njit(cache=True, inline="always")
def heap_pop(hk, hv, size):
    """Remove the smallest entry; returns (key, value, new size). ``size`` must be > 0."""
    key = hk[0]
    value = hv[0]
    size -= 1
    if size > 0:
        kk = hk[size]
        vv = hv[size]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and hk[c + 1] < hk[c]:
                c += 1
            if hk[c] < kk:
                hk[i] = hk[c]
                hv[i] = hv[c]
                i = c
            else:
                break
        hk[i] = kk
        hv[i] = vv
    return key, value, size
