"""What an insert into a loaded index and its save pay for the insert records (``provenance.json``), before and
after appends that leave the file unread, alternated in one process on the same file: before, the change copied
``list(provenance)`` (reading and checking every record) and the save encoded the whole list again
(``storage.write_json``); after, the record is appended unread and the save writes the file's text with it added.

    PYTHONPATH=. python studies/perf/provenance_ab.py --file KEPT_INDEX/v-NNNNNN/provenance.json --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from _report import cpu  # studies/perf/_report.py (this folder is on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True, help="a provenance.json (only read)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from llama_index_graphrag_suite.index.provenance_file import ProvenanceFile
    from llama_index_graphrag_suite.index.storage import write_json

    record = {"chunks": ["new#0"], "links": {}, "facts": {}, "types": []}  # an insert's record
    seconds: dict[str, list[float]] = {"whole_list": [], "appended": []}
    with tempfile.TemporaryDirectory(dir="/work/scratch") as tmp:
        for i in range(args.repeats):
            start = cpu()
            records = list(ProvenanceFile(Path(args.file), "ab"))  # the change's start copied the list
            records.append(record)
            write_json(Path(tmp) / f"whole{i}.json", records)  # the save wrote it whole
            seconds["whole_list"].append(cpu() - start)
            start = cpu()
            unread = ProvenanceFile(Path(args.file), "ab")
            unread.append(record)
            unread.save(Path(tmp) / f"appended{i}.json")
            seconds["appended"].append(cpu() - start)
            same = (Path(tmp) / f"whole{i}.json").read_bytes() == (Path(tmp) / f"appended{i}.json").read_bytes()
    print(json.dumps({"file_mb": round(Path(args.file).stat().st_size / 1e6, 1), "same_bytes": same,
                      "cpu_s": {k: [round(s, 2) for s in v] for k, v in seconds.items()},
                      "median_s": {k: round(statistics.median(v), 2) for k, v in seconds.items()}}))


if __name__ == "__main__":
    main()
