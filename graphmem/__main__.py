"""`python -m graphmem` runs the CLI."""

from graphmem.cli import main

raise SystemExit(main())
