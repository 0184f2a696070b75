"""`python -m bench [--quick] [--out PATH]`, or `python -m bench soak --minutes M --workers W`."""

from bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
