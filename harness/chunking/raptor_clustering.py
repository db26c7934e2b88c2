"""RAPTOR's clustering of one tree layer (Sarthi et al. 2024, Section 3; the authors'
``cluster_utils.py``): soft Gaussian-mixture clusters of the nodes' embeddings, chosen by BIC,
first globally and then locally inside each global cluster.

- Reduction: the embeddings are reduced to ``dim`` dimensions before each mixture is fitted.
  ``umap`` is the authors' (umap-learn, cosine metric; global neighbours ``sqrt(n - 1)``,
  local ``local_neighbors``; ``dim`` capped at ``n - 2`` globally). UMAP is seeded here (the
  authors' code is not) so that a chunking is reproducible and cacheable. ``pca`` is
  scikit-learn's PCA to the same ``dim`` (a deterministic stand-in that needs no numba);
  ``none`` fits the mixture on the embeddings themselves.
- Cluster count: the number of components in ``1 .. min(max_clusters, n) - 1`` whose fitted
  mixture has the lowest BIC (the authors' ``get_optimal_clusters``, ``random_state`` 224);
  the chosen mixture is refitted with ``random_state`` 0, as theirs is.
- Soft assignment: a node belongs to every cluster whose posterior probability exceeds
  ``threshold`` (0.1), so it may sit in several clusters, or (rarely, with more than
  1/threshold clusters) in none: the authors' code leaves such a node without a parent.
- Global/local: a global cluster of at most ``dim + 1`` nodes is one local cluster; a larger
  one is reduced again on its own and clustered the same way. The local clusters of all global
  clusters are the layer's clusters. (The authors map local members back by comparing
  embeddings, which puts duplicate texts together; positions are used here.)
- Size cap: a cluster of several nodes whose texts exceed ``max_cluster_tokens`` (3500) is
  clustered again on its own (``RAPTOR_Clustering``). Where that cannot split it (two nodes,
  or one cluster back) it is kept as is: the authors' code would recurse without end or fail
  in UMAP there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

REDUCTIONS = ("umap", "pca", "none")
BIC_SEED, FIT_SEED = 224, 0  # the authors' random states for the BIC search and the final fit


@dataclass(frozen=True)
class Clustering:
    dim: int = 10
    threshold: float = 0.1
    max_clusters: int = 50
    reduction: str = "umap"
    local_neighbors: int = 10
    max_cluster_tokens: int = 3500
    seed: int = 224  # UMAP's random_state

    def layer(self, vectors: np.ndarray, sizes: Sequence[int]) -> list[list[int]]:
        """Clusters (lists of node positions, ascending) of one layer; ``sizes``: the nodes'
        text lengths in tokens, for the size cap."""
        clusters = []
        for members in global_local(vectors, self):
            clusters.extend(self._capped(vectors, sizes, members))
        return clusters

    def _capped(self, vectors: np.ndarray, sizes: Sequence[int], members: list[int]) -> list[list[int]]:
        if len(members) <= 2 or sum(sizes[m] for m in members) <= self.max_cluster_tokens:
            return [members]
        parts = global_local(vectors[members], self)
        if len(parts) <= 1:
            return [members]
        out = []
        for part in parts:
            out.extend(self._capped(vectors, sizes, [members[p] for p in part]))
        return out


def reduce(vectors: np.ndarray, dim: int, n_neighbors: int, method: str, seed: int) -> np.ndarray:
    """``vectors`` reduced to ``dim`` dimensions by ``method`` (see the module docstring)."""
    n = len(vectors)
    dim = max(1, min(dim, n - 2, vectors.shape[1]))
    if method == "none":
        return vectors
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=dim, random_state=seed).fit_transform(vectors)
    import umap

    return umap.UMAP(n_neighbors=max(2, min(n_neighbors, n - 1)), n_components=dim, metric="cosine",
                     random_state=seed, n_jobs=1).fit_transform(vectors)


def fitted(points: np.ndarray, k: int, seed: int):
    """A ``k``-component Gaussian mixture fitted to ``points``, as RAPTOR's code fits it. Identical
    texts embed to identical points, so a layer can hold fewer distinct points than ``k``: the
    k-means start then warns (ConvergenceWarning) and the fit goes on as theirs does."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return GaussianMixture(n_components=k, random_state=seed).fit(points)


def best_n_components(points: np.ndarray, max_clusters: int) -> int:
    """The component count in ``1 .. min(max_clusters, n) - 1`` with the lowest BIC (1 for n <= 2)."""
    candidates = range(1, min(max_clusters, len(points)))
    if len(candidates) <= 1:
        return 1
    bics = [fitted(points, k, BIC_SEED).bic(points) for k in candidates]
    return candidates[int(np.argmin(bics))]


def soft_clusters(points: np.ndarray, threshold: float, max_clusters: int) -> list[list[int]]:
    """Members of each mixture component: the points whose posterior exceeds ``threshold``."""
    n = best_n_components(points, max_clusters)
    if n == 1:
        return [list(range(len(points)))]
    probs = fitted(points, n, FIT_SEED).predict_proba(points)
    return [members for j in range(n) if (members := [i for i in range(len(points)) if probs[i, j] > threshold])]


def global_local(vectors: np.ndarray, c: Clustering) -> list[list[int]]:
    """RAPTOR's two-stage clustering of ``vectors``: local clusters inside global ones."""
    n = len(vectors)
    if n <= 2:
        return [list(range(n))]
    reduced = reduce(vectors, c.dim, int((n - 1) ** 0.5), c.reduction, c.seed)
    out: list[list[int]] = []
    for members in soft_clusters(reduced, c.threshold, c.max_clusters):
        if len(members) <= c.dim + 1:
            out.append(members)
            continue
        local = reduce(vectors[members], c.dim, c.local_neighbors, c.reduction, c.seed)
        out.extend([members[i] for i in part] for part in soft_clusters(local, c.threshold, c.max_clusters))
    return out

