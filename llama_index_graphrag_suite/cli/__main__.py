"""`python -m llama_index_graphrag_suite.cli`: the same as `graphrag-suite`."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
