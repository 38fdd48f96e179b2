"""SynonymPairs behaves as the dict of pairs it replaces: same order, same lookups, same undo, same saved table."""

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from llama_index_graphrag_suite.index.synonym_pairs import SynonymPairs, read_segments, whole_table
from llama_index_graphrag_suite.index.tables import SCHEMAS


def _random_ops(seed: int, n: int = 3000):
    rng = random.Random(seed)
    names = [f"e{i}" for i in range(60)]
    for _ in range(n):
        a, b = rng.sample(names, 2)
        yield rng.choice(["set", "set", "set", "del"]), (a, b), round(rng.random(), 3)


@pytest.mark.parametrize("seed", range(4))
def test_same_as_a_dict_under_random_changes(seed):
    model, pairs = {}, SynonymPairs()
    for i, (op, key, score) in enumerate(_random_ops(seed)):
        if op == "set":
            model[key] = score
            pairs[key] = score
        elif key in model:
            del model[key]
            del pairs[key]
        else:
            assert key not in pairs
            with pytest.raises(KeyError):
                del pairs[key]
        if i % 500 == 0:
            pairs._reindex()  # rows move from the recent dict to the sorted codes: lookups must not change
    assert list(pairs) == list(model)  # insertion order, re-added pairs at the end
    assert list(pairs.items()) == [(k, pytest.approx(v)) for k, v in model.items()]
    assert len(pairs) == len(model) and pairs == {k: pytest.approx(v) for k, v in model.items()}


def test_checkpoint_restore_undoes_adds_and_removals():
    pairs = SynonymPairs({("a", "b"): 0.9, ("a", "c"): 0.8, ("b", "c"): 0.7})
    cp = pairs.checkpoint()
    del pairs[("a", "c")]
    pairs[("c", "d")] = 0.95
    pairs[("a", "c")] = 0.5  # re-added: at the end
    assert list(pairs) == [("a", "b"), ("b", "c"), ("c", "d"), ("a", "c")]
    pairs.restore(cp)
    assert list(pairs) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert ("c", "d") not in pairs and pairs[("a", "c")] == pytest.approx(0.8)


def test_touching_and_columns():
    pairs = SynonymPairs({("a", "b"): 0.9, ("c", "d"): 0.8, ("b", "e"): 0.7})
    assert [k for k, _ in pairs.touching({"b", "zz"})] == [("a", "b"), ("b", "e")]
    assert pairs.touching(set()) == []
    names, a, b, score = pairs.columns()
    assert [(names[x], names[y]) for x, y in zip(a, b)] == list(pairs)


def test_the_saved_table_reads_back_with_later_changes():
    pairs = SynonymPairs({("a", "b"): 0.9, ("c", "d"): 0.8, ("b", "e"): 0.7})
    first = whole_table(pairs, SCHEMAS["synonyms"])
    change = pa.Table.from_pydict({"a": ["c", "a", "f"], "b": ["d", "b", "g"], "gone": [True, False, False],
                                   "score": [None, 0.1, 0.6]}, schema=SCHEMAS["synonyms"])
    back = read_segments([first, change])
    assert list(back.items()) == [(("a", "b"), pytest.approx(0.1)), (("b", "e"), pytest.approx(0.7)),
                                  (("f", "g"), pytest.approx(0.6))]


def test_a_pair_listed_twice_in_a_segment_is_an_error():
    twice = pa.Table.from_pydict({"a": ["a", "a"], "b": ["b", "b"], "gone": [False, False], "score": [0.9, 0.8]},
                                 schema=SCHEMAS["synonyms"])
    with pytest.raises(ValueError, match="twice"):
        read_segments([twice])


def test_an_insert_searches_its_new_names_in_row_order_whatever_order_it_holds_them_in(monkeypatch):
    """The synonym search takes its query rows in row order: its matrix products tile them, and a row's place in a
    tile can change a cosine's last bit. A set of new names iterates in the process's string-hash order, so a local
    and a Ray build of one corpus stored synonym scores a bit apart (seen on an AMD EPYC machine)."""
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import load_documents
    from llama_index_graphrag_suite.graph import synonyms
    from llama_index_graphrag_suite.index import rows

    root = Path(__file__).resolve().parents[2]
    index = GraphRAGIndex.from_documents(load_documents(root / "examples" / "data" / "corpus.jsonl"),
                                         embed_model="hash", config=IndexConfig(entities="statistical"))
    names = list(index.state.entities)
    assert len(names) >= 10
    searched, found = [], []
    original = synonyms.search_neighbours

    def search(index_, vectors, query_rows, *args, **kwargs):
        searched.append(np.asarray(query_rows).tolist())
        pairs = original(index_, vectors, query_rows, *args, **kwargs)
        found.append([a.tolist() for a in pairs])
        return pairs

    monkeypatch.setattr(synonyms, "search_neighbours", search)
    for order in (names, names[::-1], sorted(names, key=hash)):
        with index.state.journal.change():
            rows.add_synonyms(index.state, order)
    assert len(searched) == 3 and searched[0] == sorted(searched[0]) and searched[0] == searched[1] == searched[2]
    assert found[0] == found[1] == found[2]
