"""Soak: 4 processes x 25 mixed writes on one index folder, then every document is
accounted for and the index loads clean (its semantic checks included).

The writers, each a real process, all at once:

* ``cli``: the CLI's ``index SRC --out IDX --update`` on its own source folder; each round adds a file or
  edits one it added before (an update);
* ``live``: one long-lived Python index, loaded once: insert or delete, then ``persist`` (which re-applies its
  change on whatever the others saved meanwhile);
* ``fresh``: load, insert or delete, ``persist``, every round;
* ``server``: the HTTP app object (``serve.create_app`` over a loaded index, saving to the folder): POST and
  DELETE /documents through FastAPI's test client (the server takes in newer versions before each write).

Each writer's documents are its own (no two writers touch one document), so no write may fail and none may be
lost: each writer reports what its documents should be, and the final index must hold exactly that. Small and
deterministic (hashing embedding, statistical entities) so that it runs in about a minute on two cores;
``GRAPHRAG_SOAK_WRITES`` sets the writes per process (default 25).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding

ROOT = Path(__file__).resolve().parents[2]
WRITES = int(os.environ.get("GRAPHRAG_SOAK_WRITES", "25"))
ROLES = ("cli", "live", "fresh", "server")

WRITER = r'''
import json, sys
from pathlib import Path
from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding

role, folder, writes, work = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
present, gone = {}, set()  # doc key -> marker of its last text; keys deleted


def text(i, rev):
    marker = f"zq{role}{i}r{rev}"
    return marker, (f"Writer {role} note {i} revision {rev} ({marker}) tells of Marlow on the Esk River, "
                    f"of Kell Academy in Dunmore and of the painter Ada Lorne.")


def own_to_delete(i):
    """Every fourth write deletes the oldest document this writer still has."""
    return i % 4 == 3 and present and next(iter(present))


if role == "cli":
    from llama_index_graphrag_suite.cli import main

    src = work / "src-cli"
    src.mkdir(parents=True)
    for i in range(writes):
        if i % 3 == 2 and present:  # edit the oldest file: an update of that document
            key = next(iter(present))
            marker, body = text(int(key.split("-")[1].split(".")[0]), i)
        else:
            key = f"cli-{i}.txt"
            marker, body = text(i, 0)
        (src / key).write_text(body)
        present[key] = marker
        code = main(["index", str(src), "--out", str(folder), "--update", "--embed", "hash", "--quiet"])
        assert code == 0, (role, i, code)
elif role in ("live", "fresh"):
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    for i in range(writes):
        if role == "fresh":
            index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
        victim = own_to_delete(i)
        if victim:
            index.delete(victim)
            del present[victim]
            gone.add(victim)
        else:
            key = f"{role}-{i}"
            marker, body = text(i, 0)
            index.insert([make_document(key, body, key)])
            present[key] = marker
        index.persist(folder)
        assert not index.pending_documents()
else:  # the server's app object, saving into the folder
    from fastapi.testclient import TestClient
    from llama_index_graphrag_suite.serve.app import create_app

    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())
    client = TestClient(create_app(index, persist_dir=folder), base_url="http://127.0.0.1")
    for i in range(writes):
        victim = own_to_delete(i)
        if victim:
            r = client.delete(f"/documents/{victim}")
            del present[victim]
            gone.add(victim)
        else:
            key = f"server-{i}"
            marker, body = text(i, 0)
            r = client.post("/documents", json={"documents": [{"doc_id": key, "text": body, "title": key}]})
            present[key] = marker
        assert r.status_code == 200 and r.json()["persisted"], (role, i, r.status_code, r.text)
print(json.dumps({"present": present, "gone": sorted(gone)}))
'''


def test_four_writers_times_many_writes_lose_nothing(tmp_path):
    folder = tmp_path / "idx"
    base = [make_document("base-0", "Marlow is a town on the Esk River, known for its harbour.", "Marlow"),
            make_document("base-1", "Ada Lorne was a painter born in Marlow; she studied at Kell Academy.", "Ada")]
    GraphRAGIndex.from_documents(base, embed_model=HashEmbedding(),
                                 config=IndexConfig(entities="statistical", entity_threshold=0.1)).persist(folder)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    children = {role: subprocess.Popen([sys.executable, "-c", WRITER, role, str(folder), str(WRITES), str(tmp_path / role)],
                                       cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for role in ROLES}
    reports = {}
    for role, child in children.items():
        out, err = child.communicate(timeout=900)
        assert child.returncode == 0, (role, err[-4000:])
        reports[role] = json.loads(out.strip().splitlines()[-1])

    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding())  # loads clean: checksums and semantic checks
    texts: dict[str, str] = {}
    for cid in index.chunk_order:
        rec = index.chunks[cid]
        texts[rec.doc_id] = texts.get(rec.doc_id, "") + rec.text
    expected = {"base-0", "base-1"}
    for role, report in reports.items():
        for key, marker in report["present"].items():
            doc = key if role != "cli" else next((d for d in texts if d.endswith(key)), None)
            assert doc in texts, f"{role}'s document {key} is missing"
            assert marker in texts[doc], f"{role}'s document {key} lost its last revision ({marker})"
            expected.add(doc)
        for key in report["gone"]:
            assert key not in texts, f"{role}'s deleted document {key} is back"
    assert set(texts) == expected  # nothing else either
    # every write was one save, in turn: the base, then 4 x WRITES versions, none skipped or written twice
    assert index.loaded_version == f"v-{1 + len(ROLES) * WRITES:06d}"
