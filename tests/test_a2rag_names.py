"""A2RAG's per-snapshot name structures (``names.py``, ``SeedIndex.build``, ``build_mapback``) against a plain
reference: the dicts and loops they replace, written out here, on hand-made indexes, a loaded one (columns) and a
changed one (records). Any difference in a name, its position, its rows, a word's names or π fails."""

from types import SimpleNamespace

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph.snapshot import GraphSnapshot
import pyarrow as pa

from llama_index_graphrag_suite.methods.a2rag.names import HashedStrings, strip_stop, title_names
from llama_index_graphrag_suite.methods.a2rag.seeds import SeedIndex
from llama_index_graphrag_suite.methods.a2rag.summaries import build_mapback
from llama_index_graphrag_suite.methods.shared_graph import ChunkPositions, chunk_rows, entity_rows, node_rows
from llama_index_graphrag_suite.text import accent_aliases, fold_accents, is_candidate_token, normalize_entity


def plain_names(index, align_titles=True, max_names_per_word=200):
    """The structures as plain dicts and lists, built the obvious way (one Python step per entity, chunk, word)."""
    snap = index.snapshot
    rows_of: dict[str, list[int]] = {}
    for key in index.entities:
        if snap.has(key):
            rows_of.setdefault(key, []).append(snap.row(key))
    if align_titles:
        for cid, rec in index.chunks.items():
            title = strip_stop(normalize_entity(rec.title)) if rec.title else ""
            if title and snap.has(cid):
                rows_of.setdefault(title, []).append(snap.row(cid))
    names = list(rows_of)
    by_word: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        for w in set(name.split()) | set(fold_accents(name).split()):
            if is_candidate_token(w):
                by_word.setdefault(w, []).append(i)
    by_word = {w: ids for w, ids in by_word.items() if len(ids) <= max_names_per_word}
    exact = {n: i for i, n in enumerate(names)}
    exact.update((folded, exact[n]) for folded, n in accent_aliases(names).items())
    return names, [rows_of[n] for n in names], exact, by_word


def plain_mapback(index):
    snap, position = index.snapshot, ChunkPositions(index)
    pairs = {(snap.row(key), position[c]) for key, ent in index.entities.items() if snap.has(key)
             for c in ent.chunks if c in position}
    pairs |= {(snap.row(c), p) for p, c in enumerate(index.chunk_order)}
    dense = np.zeros((snap.num_nodes, len(index.chunk_order)), np.float32)
    for r, c in pairs:
        dense[r, c] = 1.0
    return dense


def assert_rows(index):
    """The snapshot rows of the entities and chunks (``shared_graph``, found without lookups when in order)."""
    snap = index.snapshot
    assert entity_rows(index).tolist() == [snap.row(k) if snap.has(k) else -1 for k in index.entities]
    ids = list(index.chunks)
    assert node_rows(index, ids, len(index.entities)).tolist() == [snap.row(c) if snap.has(c) else -1 for c in ids]


def assert_same(index, align_titles=True, max_names_per_word=200):
    assert_rows(index)
    names, rows, exact, by_word = plain_names(index, align_titles, max_names_per_word)
    built = SeedIndex.build(index, align_titles, max_names_per_word)
    assert list(built.names) == names and [built.names[i] for i in range(len(names))] == names
    assert [built.name_rows[i] for i in range(len(names))] == rows and len(built.name_rows) == len(names)
    assert dict(built.exact.items()) == exact and len(built.exact) == len(exact)
    assert dict(built.by_word.items()) == by_word and len(built.by_word) == len(by_word)
    # what is not there is not found: other strings, each word's and name's near misses
    for probe in ["", "nothing here", *(n + " x" for n in names), *(w[:-1] for w in by_word), *(n.upper() for n in names)]:
        assert built.exact.get(probe) == exact.get(probe) and (probe in built.exact) == (probe in exact)
        assert built.by_word.get(probe) == by_word.get(probe)
    return built


class Records(dict):
    """A dict of records (what a changed index's tables read as)."""


def hand_made_index(extra_entities=(), clash=False):
    """Entities with accents, stop words, numbers, odd spaces; chunks titled as an entity, repeated titles, two
    titles making one name, a chunk outside the snapshot, an untitled one. ``extra_entities``: entity keys the
    snapshot does not list (its node rows are then not the entities' order); ``clash``: an entity key that is a
    chunk id too (the snapshot's lookup gives the chunk's row)."""
    entities = ["tekezé river", "malmö", "malmo", "josé", "jośe", "lake tana", "river plate", "a\tb c", "1999 cup",
                "12 men", "the", "café  noir"] + (["c4"] if clash else [])
    chunks = [("gone-z", "Zebra Page"), ("c1", "The Tekezé River"), ("c2", "Lake Tana"), ("c3", "Lake Tana"), ("c4", "Blue Nile"),
              ("c5", ""), ("c6", "River Plate"), ("c7", "Of Mice and Men"), ("c8", "Blue Nile"), ("gone", "Lost Page"),
              ("c9", "Malmo"), ("c10", "The Blue Nile"), ("c11", None), ("c12", "Ghost Town"), ("c13", "Mice and Men"),
              ("c14", "Zebra Page")]  # its first chunk is no node: after the titles first seen on nodes
    ids = [c for c, _ in chunks if not c.startswith("gone")]
    node_ids = entities + ids
    entities = entities + list(extra_entities)
    empty = (np.zeros(0, np.int32), np.zeros(0, np.int32))
    contains = (np.arange(len(entities), len(node_ids)), np.zeros(len(ids), np.int32))
    snapshot = GraphSnapshot.from_edges(node_ids, len(entities), empty, contains, (*empty, np.zeros(0, np.float32)))
    return SimpleNamespace(snapshot=snapshot, entities=Records.fromkeys(entities),
                           chunks=Records((c, SimpleNamespace(title=t)) for c, t in chunks), facts={})


def test_names_words_and_rows_match_the_plain_dicts_on_a_hand_made_index():
    index = hand_made_index()
    built = assert_same(index)
    # what the cases are there for
    assert built.exact["tekeze river"] == built.exact["tekezé river"] == 0  # accent-free alias
    assert built.exact["malmo"] == 2  # a name itself, never the alias of "malmö"
    assert "jose" not in built.exact  # two names fold to it: no alias
    assert built.name_rows[0] == [0, index.snapshot.row("c1")]  # the entity, then the chunk titled so
    assert built.names[len(index.entities)] == "blue nile"
    assert built.name_rows[len(index.entities)] == [index.snapshot.row(c) for c in ("c4", "c8", "c10")]
    assert "lost page" not in built.exact  # its chunk is not in the snapshot
    assert built.by_word["tekeze"] == built.by_word["tekezé"] == [0]
    assert "12" not in built.by_word and built.by_word["1999"] == [8]
    assert built.by_word["c"] == [7] if is_candidate_token("c") else "c" not in built.by_word
    assert built.name_rows[built.exact["mice and men"]] == [index.snapshot.row("c7"), index.snapshot.row("c13")]
    assert_same(index, align_titles=False)
    few = assert_same(index, max_names_per_word=1)  # "river" is in two names: no key then
    assert "river" not in few.by_word and "lake" in few.by_word


def test_names_match_when_the_snapshot_lists_the_entities_otherwise():
    # an entity the snapshot lacks (a title naming it is a title of its own); an entity key that is a chunk id too
    ghost = hand_made_index(extra_entities=["ghost town"])
    built = assert_same(ghost)
    assert built.name_rows[built.exact["ghost town"]] == [ghost.snapshot.row("c12")]
    assert_same(hand_made_index(extra_entities=[]))
    clash = hand_made_index(clash=True)
    assert clash.snapshot.row("c4") > len(clash.entities)
    assert_same(clash)


def test_title_names_are_the_plain_normalisation():
    titles = ["The Tekezé River", "Of Mice and Men", "Lake Tana", "lake  tana", "A", "", None, "x_y", "Bob's Film",
              "U.S. Army", "Ⅻ Roman", "ÆON", "  Spaced  Out ", "the the", "1999", "Straße", "In", "Tana of",
              "plain words here", "Dr. No", "Tab\there"]
    assert title_names(pa.array(titles, pa.string())) == [
        strip_stop(normalize_entity(t)) if t else "" for t in titles]


def test_names_match_on_a_loaded_index_and_after_a_change(tmp_path):
    from conftest import CORPUS

    embed = HashEmbedding(dim=64)
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    docs.append(make_document("p-esk", "Esk  Rivér", "The Esk Rivér is a river in Marlow. Ada Lorne painted it."))
    built = GraphRAGIndex.from_documents(docs, embed_model=embed,
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    built.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=embed)
    from llama_index_graphrag_suite.index.entity_columns import EntityColumns

    assert isinstance(loaded.entities, EntityColumns)  # the array path
    for index in (built, loaded):
        assert_same(index)
        assert np.array_equal(chunk_rows(index), index.snapshot.rows(index.chunk_order))
        assert np.array_equal(build_mapback(index).toarray(), plain_mapback(index))
        pi = build_mapback(index)
        assert pi.has_canonical_format and (pi.data == 1).all()
    loaded.insert([make_document("p-new", "Dunmore", "Dunmore is a town. The Vant Gallery is in Dunmore.")])
    assert not isinstance(loaded.entities, EntityColumns)  # records now
    assert_same(loaded)
    assert np.array_equal(build_mapback(loaded).toarray(), plain_mapback(loaded))


def test_hashed_strings_check_every_hit():
    table = ["beta", "gamma", "alpha", "delta"]  # every entry filed under alpha's hash: each one a collision
    same = HashedStrings(np.full(len(table), hash("alpha"), np.int64), table.__getitem__)
    assert same.find("alpha") == 2 and same.find("beta") == -1  # beta is not filed under its own hash
    words = ["alpha", "beta", "gamma", "delta"]
    real = HashedStrings(np.array([hash(w) for w in words], np.int64), words.__getitem__)
    assert [real.find(w) for w in words] == [0, 1, 2, 3] and real.find("alph") == -1
    with pytest.raises(KeyError):
        SeedIndex.build(hand_made_index()).exact["no such name"]


def test_top_reached_is_top_k():
    from llama_index_graphrag_suite.methods.a2rag.stages import top_reached
    from llama_index_graphrag_suite.methods.scoring import top_k

    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        r = np.zeros(n)
        hit = rng.choice(n, int(rng.integers(0, n + 1)), replace=False)
        r[hit] = rng.choice([0.1, 0.2, 0.3, 0.5, -0.1], hit.size)  # ties everywhere; a negative one now and then
        for k in (1, 3, 20, 80):
            assert np.array_equal(top_reached(r, k), top_k(r, k))


def test_global_top_by_the_local_push_is_the_dense_paths_top(monkeypatch):
    """Eq. 11's top-L nodes from the local push's reached nodes (large graphs) are the nodes and scores, bit for bit,
    that ranking every node's PPR score gives, including when fewer than L nodes are reached."""
    import scipy.sparse as sp

    from llama_index_graphrag_suite.graph import ppr
    from llama_index_graphrag_suite.methods.a2rag.config import A2RAGConfig
    from llama_index_graphrag_suite.methods.a2rag.stages import global_top, top_reached

    for name, value in (("FAST_MIN_NNZ", 0), ("PUSH_MIN_NNZ", 0), ("PUSH_MAX_RESET_SHARE", 1.0)):
        monkeypatch.setattr(ppr, name, value)
    rng = np.random.default_rng(5)
    pushed = 0
    for trial in range(40):
        n = int(rng.integers(30, 400))
        a = sp.random(n, n, density=float(rng.uniform(0.005, 0.05)), random_state=trial, format="csr")
        a = ((a + a.T) > 0).astype(np.float64)
        transition = ppr.transition_matrix(a)
        assert transition.pushes
        p0 = np.zeros(n)
        seeds = np.sort(rng.choice(n, int(rng.integers(1, 6)), replace=False))
        p0[seeds] = rng.uniform(0.1, 1.0, seeds.size)
        config = A2RAGConfig(ppr_top_l=int(rng.choice([3, 20, 500])))
        top, scores = global_top(transition, p0, seeds, config)
        r = ppr.personalized_pagerank(transition, p0, damping=1.0 - config.ppr_alpha, tol=config.ppr_tol)
        want = top_reached(r, config.ppr_top_l)
        assert np.array_equal(top, want) and np.array_equal(scores, r[want])
        pushed += int(np.count_nonzero(r) >= config.ppr_top_l)
    assert 0 < pushed < 40  # both the reached nodes' ranking and the every-node fallback ran
    monkeypatch.setattr(ppr, "PUSH_MIN_NNZ", 10**12)  # a small graph: no local push, the dense scores
    transition = ppr.transition_matrix(a)
    assert not transition.pushes
    top, scores = global_top(transition, p0, seeds, config)
    r = ppr.personalized_pagerank(transition, p0, damping=1.0 - config.ppr_alpha, tol=config.ppr_tol)
    want = top_reached(r, config.ppr_top_l)
    assert np.array_equal(top, want) and np.array_equal(scores, r[want])


def test_title_names_strip_every_end_stop_word_as_python_does():
    import random

    from llama_index_graphrag_suite.text import STOP_WORDS

    rng = random.Random(1)
    vocab = sorted(STOP_WORDS)[:30] + ["Lake", "Tana", "River", "A", "The", "Of", "Nile", "x9", "AND", "In", "Ré"]
    titles = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 5))) for _ in range(2000)]
    assert title_names(pa.array(titles, pa.string())) == [strip_stop(normalize_entity(t)) for t in titles]
