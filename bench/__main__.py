"""`python -m bench [--quick] [--out PATH]`, `python -m bench soak --minutes M --workers W`,
or `python -m bench tokens [--check | --update]` (bench/tokens.py)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["tokens"]:  # its own options; it needs none of the timing benchmark's imports
        from bench.tokens import main as tokens

        raise SystemExit(tokens(sys.argv[2:]))
    from bench.cli import main

    raise SystemExit(main())
