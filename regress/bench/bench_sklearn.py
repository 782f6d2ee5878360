#!/usr/bin/env python3
"""scikit-learn KD-tree radius count on the data sets bench_core wrote.

usage: bench_sklearn.py DATA_DIR case:eps [case:eps ...]
Single-threaded, counting only (query_radius count_only=True), tree build
included.  Prints unordered pairs (self matches removed) and seconds.
"""
import sys
import time

import numpy as np
from sklearn.neighbors import KDTree


def main():
    data_dir = sys.argv[1]
    print(f"{'case':22s} {'pairs':>11s} {'sklearn_s':>9s}")
    for arg in sys.argv[2:]:
        name, eps = arg.rsplit(":", 1)
        eps = float(eps)
        pts = np.loadtxt(f"{data_dir}/{name}.csv", delimiter=",")[:, 1:]
        t0 = time.perf_counter()
        tree = KDTree(pts, leaf_size=40)
        counts = tree.query_radius(pts, r=eps, count_only=True)
        elapsed = time.perf_counter() - t0
        pairs = (int(counts.sum()) - len(pts)) // 2
        print(f"{name:22s} {pairs:11d} {elapsed:9.2f}", flush=True)


if __name__ == "__main__":
    main()
