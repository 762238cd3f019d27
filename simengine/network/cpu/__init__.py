"""CPU backend of the network engine (numba, parallel over batches of sources): multi-source BFS,
BFS, Dijkstra (binary heap, Dial's bucket queue), blocked Floyd–Warshall, and
:mod:`.engine`, which picks one of them and yields the per-batch partials."""
