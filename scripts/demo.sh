#!/usr/bin/env bash
# A short story of graphmem for a new user, on a throwaway home dir and a throwaway repository.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
gm="$here/.venv/bin/graphmem"
export GRAPHMEM_HOME="$(mktemp -d)"
repo="$(mktemp -d)/shop-api"
trap 'rm -rf "$GRAPHMEM_HOME" "$(dirname "$repo")"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

mkdir -p "$repo/src/shop"
cd "$repo"
git init -q -b main
cat > src/shop/db.py <<'PY'
import os


def connect(url=None):
    """Open the database named by DATABASE_URL."""
    url = url or os.environ["DATABASE_URL"]
    return url


def migrate(conn):
    return conn
PY
cat > src/shop/api.py <<'PY'
from shop.db import connect


class OrderService:
    def place(self, order):
        return connect()
PY
git add . && git -c user.name=demo -c user.email=demo@example.invalid commit -qm "shop api skeleton"

say "Yesterday an agent lost an hour on this project. graphmem keeps what it learned."
run "$gm" index
run "$gm" add --kind pitfall --file src/shop/db.py \
  "KeyError: 'DATABASE_URL' in connect(): the tests need DATABASE_URL=postgres://localhost:5432/shop_test; export it before running pytest -k orders"
run "$gm" add --kind decision \
  "We chose psycopg 3 over SQLAlchemy for OrderService: queries are few and hand-tuned, and the ORM hid N+1 bugs"
run "$gm" add --kind convention "Use pnpm, not npm, for the admin frontend; never commit .env files"
run "$gm" add --kind env "Local Postgres listens on localhost:5433, not 5432, on the CI runners"

say "Today a new session starts. The agent gets a tiny index, not the whole memory:"
run "$gm" brief

say "It is about to touch the database code, and asks what we know:"
run "$gm" search "why do the order tests fail with a KeyError?" --file src/shop/db.py

id=$("$gm" list --kind pitfall --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
say "It opens the pitfall in full, with the code it is linked to:"
run "$gm" get "$id"

say "What does memory know about connect()?"
run "$gm" related "connect()"

say "The decision about the ORM is reversed, so it is forgotten for real (graph, indexes, journal):"
did=$("$gm" list --kind decision --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
run "$gm" forget "$did"
run "$gm" stats
say "The database can always be rebuilt from the journal:"
run "$gm" rebuild
