"""`python -m graphmem.staleness stale update ...`: the git hooks' updater without the CLI."""

from graphmem.staleness.update import main

raise SystemExit(main())
