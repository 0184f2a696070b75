"""`python -m supervisor_graph.cli`."""

import sys

from supervisor_graph.cli.main import main

sys.exit(main())
