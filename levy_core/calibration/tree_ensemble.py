"""Gradient-boosted trees as plain arrays: a saved form a model file can carry without pickle,
and the NumPy evaluation that reads it.

A learned spread (issue 51) uses scikit-learn's ``HistGradientBoostingRegressor`` (fitted to
the log of a Poisson ensemble's prediction) with one categorical input (the channel). A model file is input a stranger can
send, so the trees are kept as their node arrays (``TreeEnsemble.to_dict``), checked when
read (``TreeEnsemble.from_dict``), and evaluated here exactly as scikit-learn's predictor does
(``_predictor.pyx``). The inputs are first put as scikit-learn puts them: categorical columns
first, each value replaced by its index among the categories seen in fitting (an unseen one is
missing), then the numeric columns. Down a tree, a missing value follows
``missing_go_to_left``; a categorical index goes left when it is in the node's left bitset,
right when it was seen in fitting, and otherwise as a missing value; a numeric value goes left
when ``≤ num_threshold``. The prediction is ``exp(baseline + Σ leaf values)`` (the Poisson
link; for a squared-error model fitted to a log, the exp of its prediction).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

__all__ = ["TreeEnsemble"]

NODE_FIELDS = ("value", "feature_idx", "num_threshold", "missing_go_to_left", "left", "right", "is_leaf",
               "is_categorical", "bitset_idx")
BITSET_WORDS = 8  # 256 categories: scikit-learn's bitsets are (n, 8) uint32
MAX_TREES, MAX_NODES = 1_000, 100_000  # what a saved form may hold, all trees together (a fit: 200 of 29 nodes)


@dataclass(frozen=True)
class Tree:
    """One tree's nodes (each array (n_nodes,)) and its categorical splits' left bitsets
    (n_splits, 8) uint32."""

    value: np.ndarray
    feature_idx: np.ndarray
    num_threshold: np.ndarray
    missing_go_to_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    is_leaf: np.ndarray
    is_categorical: np.ndarray
    bitset_idx: np.ndarray
    left_bitsets: np.ndarray


def _compiled_walk() -> Any:
    """scikit-learn's compiled tree walk, or None where this version lacks it (the NumPy walk
    then runs; both are tested to agree)."""
    try:
        from sklearn.ensemble._hist_gradient_boosting._predictor import _predict_from_raw_data
    except ImportError:  # pragma: no cover - a scikit-learn without the private module
        return None
    return _predict_from_raw_data


def _in_bitset(bitsets: np.ndarray, row: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Whether each integer ``value`` (n,) in [0, 256) is set in ``bitsets[row]`` (n,)."""
    return ((bitsets[row, value // 32] >> (value % 32).astype(np.uint32)) & 1).astype(bool)


@dataclass(frozen=True)
class TreeEnsemble:
    """A fitted Poisson ensemble as arrays.

    Attributes
    ----------
    trees : tuple of Tree
    baseline : float
        The raw (log) prediction before any tree.
    n_features : int
    column_order : ndarray, shape (n_features,), int64
        The input column behind each of the trees' features (categorical ones first).
    categories : tuple of ndarray
        For each categorical feature (the first ``len(categories)``), the sorted values seen
        in fitting; a value's index among them is what the trees split on.
    known_categories : ndarray, shape (n_categorical_features, 8), uint32
        The encoded categories seen in fitting, per categorical feature (bitsets).
    category_slot : ndarray, shape (n_features,), int64
        Each of the trees' features' row in ``known_categories`` (-1 for a numeric feature).
    """

    trees: tuple[Tree, ...]
    baseline: float
    n_features: int
    column_order: np.ndarray
    categories: tuple[np.ndarray, ...]
    known_categories: np.ndarray
    category_slot: np.ndarray

    @classmethod
    def from_sklearn(cls, model: Any) -> TreeEnsemble:
        """The arrays of a fitted ``HistGradientBoostingRegressor`` on numeric input (a
        categorical feature given by the ``categorical_features`` mask): with the Poisson loss,
        `predict` is the model's prediction; with the squared error (a model fitted to a log,
        as the learned spread's distilled trees are), `predict` is the exp of it."""
        if getattr(model, "loss", None) not in ("poisson", "squared_error"):
            raise ValueError(f"only the Poisson and squared-error losses are carried; got {getattr(model, 'loss', None)!r}")
        known, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
        n = int(model.n_features_in_)
        pre = getattr(model, "_preprocessor", None)
        if pre is None:  # no categorical feature: the columns as given
            order, categories = np.arange(n), ()
        else:  # scikit-learn's ColumnTransformer: the ordinal-encoded categorical columns, then the numeric ones
            parts = {name: (t, np.flatnonzero(np.asarray(cols, bool))) for name, t, cols in pre.transformers_}
            encoder, cat_cols = parts["encoder"]
            order = np.concatenate([cat_cols, parts["numerical"][1]])
            categories = tuple(np.asarray(c, np.float64) for c in encoder.categories_)
        categorical = np.asarray(model._bin_mapper.is_categorical, bool)
        slot = np.where(categorical, np.asarray(f_idx_map, np.int64), -1)
        trees = []
        for (predictor,) in model._predictors:
            nodes = predictor.nodes
            trees.append(Tree(*(np.array(nodes[name]) for name in NODE_FIELDS),
                              left_bitsets=np.array(predictor.raw_left_cat_bitsets, np.uint32).reshape(-1, BITSET_WORDS)))
        return cls(tuple(trees), float(np.ravel(model._baseline_prediction)[0]), n, order.astype(np.int64), categories,
                   np.array(known, np.uint32).reshape(-1, BITSET_WORDS), slot)

    def encode(self, x: np.ndarray) -> np.ndarray:
        """The trees' inputs from ``x`` (n, n_features) in the input's column order."""
        x = np.asarray(x, np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"x must have shape (n, {self.n_features}); got {x.shape}")
        out = x[:, self.column_order].copy()
        for j, seen in enumerate(self.categories):
            if not len(seen):
                out[:, j] = np.nan
                continue
            at = np.clip(np.searchsorted(seen, out[:, j]), 0, len(seen) - 1)
            out[:, j] = np.where(seen[at] == out[:, j], at, np.nan)  # unseen: missing, as scikit-learn's encoder
        return out

    def raw(self, x: np.ndarray, *, compiled: bool = True) -> np.ndarray:
        """The log of the prediction at rows ``x`` (n, n_features): baseline plus each tree's leaf.
        ``compiled``: walk the trees with scikit-learn's compiled predictor where it can be
        imported (the same arithmetic, about 5× faster); otherwise, or with False, in NumPy."""
        x = self.encode(x)
        walk = _compiled_walk() if compiled else None
        if walk is not None:
            return self._raw_compiled(x, walk)
        out = np.full(x.shape[0], self.baseline)
        for tree in self.trees:
            out += tree.value[self._leaves(tree, x)]
        return out

    def _raw_compiled(self, x: np.ndarray, walk: Any) -> np.ndarray:
        """`raw` through scikit-learn's ``_predict_from_raw_data``, one call a tree."""
        from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

        x = np.ascontiguousarray(x, np.float64)
        known = np.ascontiguousarray(self.known_categories if len(self.known_categories)
                                     else np.zeros((1, BITSET_WORDS), np.uint32))
        f_idx_map = np.ascontiguousarray(np.maximum(self.category_slot, 0).astype(np.uint32))
        out, leaf = np.full(x.shape[0], self.baseline), np.empty(x.shape[0])
        for nodes, bitsets in self._records(PREDICTOR_RECORD_DTYPE):
            walk(nodes, x, bitsets, known, f_idx_map, 1, leaf)
            out += leaf
        return out

    @cached_property
    def _record_cache(self) -> dict:
        return {}

    def _records(self, dtype: np.dtype) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each tree as scikit-learn's node records and bitsets, built once."""
        if "records" not in self._record_cache:
            records = []
            for tree in self.trees:
                nodes = np.zeros(tree.value.size, dtype)
                for name in NODE_FIELDS:
                    nodes[name] = getattr(tree, name)
                bitsets = np.ascontiguousarray(tree.left_bitsets if len(tree.left_bitsets)
                                               else np.zeros((1, BITSET_WORDS), np.uint32))
                records.append((nodes, bitsets))
            self._record_cache["records"] = records
        return self._record_cache["records"]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The prediction ``exp(raw(x))``, shape (n,), the exponent within ±700 (finite)."""
        return np.exp(np.clip(self.raw(x), -700.0, 700.0))

    def _leaves(self, tree: Tree, x: np.ndarray) -> np.ndarray:
        """Each row's leaf in ``tree``: every row walks down one level a step, all rows at once."""
        node = np.zeros(x.shape[0], np.int64)
        active = np.flatnonzero(tree.is_leaf[node] == 0)
        while active.size:
            at = node[active]
            feature = tree.feature_idx[at]
            value = x[active, feature]
            missing_left = tree.missing_go_to_left[at].astype(bool)
            left = np.where(np.isnan(value), missing_left, value <= tree.num_threshold[at])
            categorical = tree.is_categorical[at].astype(bool)
            if categorical.any():
                c = np.flatnonzero(categorical)
                v = value[c]
                usable = ~np.isnan(v) & (v >= 0)
                code = np.where(usable, v, 0).astype(np.int64) % 256  # scikit-learn casts to uint8
                in_left = _in_bitset(tree.left_bitsets, tree.bitset_idx[at[c]].astype(np.int64), code)
                slot = self.category_slot[feature[c]]
                known = _in_bitset(self.known_categories, np.maximum(slot, 0), code) & (slot >= 0)
                left[c] = np.where(usable & in_left, True, np.where(usable & known, False, missing_left[c]))
            node[active] = np.where(left, tree.left[at], tree.right[at]).astype(np.int64)
            active = active[tree.is_leaf[node[active]] == 0]
        return node

    def to_dict(self) -> dict:
        """Plain lists and numbers (JSON), read back by `from_dict`."""
        return {"baseline": self.baseline, "n_features": self.n_features, "column_order": self.column_order.tolist(),
                "categories": [c.tolist() for c in self.categories],
                "known_categories": self.known_categories.tolist(), "category_slot": self.category_slot.tolist(),
                "trees": [{**{name: getattr(t, name).tolist() for name in NODE_FIELDS},
                           "left_bitsets": t.left_bitsets.tolist()} for t in self.trees]}

    @classmethod
    def from_dict(cls, data: Any) -> TreeEnsemble:
        """The inverse of `to_dict`, checked as input: ValueError naming what is wrong with a
        saved form whose trees would not evaluate (shapes, indices, cycles, non-finite values)."""
        if not isinstance(data, dict):
            raise ValueError("a saved tree ensemble must be a mapping")
        try:
            baseline, n_features = float(data["baseline"]), int(data["n_features"])
            known = np.array(data["known_categories"], np.uint32).reshape(-1, BITSET_WORDS)
            slot = np.array(data["category_slot"], np.int64).reshape(-1)
            order = np.array(data["column_order"], np.int64).reshape(-1)
            categories = tuple(np.array(c, np.float64).reshape(-1) for c in data["categories"])
            raw_trees = data["trees"]
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"a saved tree ensemble lacks or garbles a field: {exc}") from exc
        if not np.isfinite(baseline) or not 1 <= n_features <= 10_000 or slot.shape != (n_features,):
            raise ValueError("a saved tree ensemble's baseline, feature count or category slots are invalid")
        if slot.max(initial=-1) >= len(known) or slot.min(initial=-1) < -1:
            raise ValueError("a saved tree ensemble's category slots point outside its known categories")
        if sorted(order.tolist()) != list(range(n_features)) or len(categories) > n_features:
            raise ValueError("a saved tree ensemble's column order is not a permutation of its features")
        if any(not np.all(np.isfinite(c)) or np.any(np.diff(c) <= 0) or c.size > 256 for c in categories):
            raise ValueError("a saved tree ensemble's categories must be at most 256 sorted distinct finite values")
        if not isinstance(raw_trees, list) or len(raw_trees) > MAX_TREES:
            raise ValueError(f"a saved tree ensemble holds a list of at most {MAX_TREES} trees")
        trees, total = [], 0
        for i, raw_tree in enumerate(raw_trees):
            try:
                tree = Tree(np.array(raw_tree["value"], np.float64), np.array(raw_tree["feature_idx"], np.int64),
                            np.array(raw_tree["num_threshold"], np.float64),
                            np.array(raw_tree["missing_go_to_left"], np.uint8), np.array(raw_tree["left"], np.int64),
                            np.array(raw_tree["right"], np.int64), np.array(raw_tree["is_leaf"], np.uint8),
                            np.array(raw_tree["is_categorical"], np.uint8), np.array(raw_tree["bitset_idx"], np.int64),
                            np.array(raw_tree["left_bitsets"], np.uint32).reshape(-1, BITSET_WORDS))
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"tree {i} of a saved ensemble lacks or garbles a field: {exc}") from exc
            total += tree.value.size
            if total > MAX_NODES:
                raise ValueError(f"a saved tree ensemble holds more than {MAX_NODES} nodes")
            _check_tree(tree, i, n_features, slot)
            trees.append(tree)
        return cls(tuple(trees), baseline, n_features, order, categories, known, slot)


def _check_tree(tree: Tree, i: int, n_features: int, slot: np.ndarray) -> None:
    """ValueError unless ``tree`` is a well-formed binary tree rooted at node 0."""
    n = tree.value.size
    if n == 0 or any(getattr(tree, name).shape != (n,) for name in NODE_FIELDS):
        raise ValueError(f"tree {i} of a saved ensemble has node arrays of different lengths")
    if not np.all(np.isfinite(tree.value)):
        raise ValueError(f"tree {i} of a saved ensemble has a non-finite leaf value")
    inner = tree.is_leaf == 0
    if inner.any():
        kids = np.concatenate([tree.left[inner], tree.right[inner]])
        # children come after their parent (scikit-learn's order), so there is no cycle
        parents = np.concatenate([np.flatnonzero(inner)] * 2)
        if kids.min() < 1 or kids.max() >= n or np.any(kids <= parents):
            raise ValueError(f"tree {i} of a saved ensemble has a child index out of order or out of range")
        features = tree.feature_idx[inner]
        if features.min() < 0 or features.max() >= n_features:
            raise ValueError(f"tree {i} of a saved ensemble splits on a feature it does not have")
        categorical = inner & (tree.is_categorical != 0)
        if categorical.any() and (tree.bitset_idx[categorical].min() < 0
                                  or tree.bitset_idx[categorical].max() >= len(tree.left_bitsets)
                                  or np.any(slot[tree.feature_idx[categorical]] < 0)):
            raise ValueError(f"tree {i} of a saved ensemble has a categorical split without its bitset")
