-- graphmem on PostgreSQL, migration 1: the tables store/postgres.py reads and writes.
-- Migrations are numbered files (NNNN_name.sql), each applied once in its own transaction and
-- recorded in schema_migrations. Columns and defaults are those of graphmem/store/schema.py;
-- link tables are named after LINK_TABLES, lower-cased, one row per (source, target).
CREATE EXTENSION IF NOT EXISTS vector;

-- applied_seq: the journal sequence number of the last op applied.
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);

-- The words of a text as keyword search indexes and queries them: split at every character that is
-- not a letter or digit first (as the embedded store's tokenizer does: `src/a.py` is `src a py`,
-- and PostgreSQL's parser alone would keep `proxy.log` as one token), then English stemming and
-- stopwords. Error codes, ports and versions (E0425, 8080, py311) stay words.
CREATE FUNCTION graphmem_words(text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT to_tsvector('english', regexp_replace($1, '[^[:alnum:]]+', ' ', 'g')) $$;

CREATE TABLE items (
  id text PRIMARY KEY,
  project text NOT NULL DEFAULT '',
  branch text NOT NULL DEFAULT '',
  kind text NOT NULL DEFAULT 'note',
  title text NOT NULL DEFAULT '',
  body text NOT NULL DEFAULT '',
  tags text[] NOT NULL DEFAULT '{}',
  importance double precision NOT NULL DEFAULT 0.5,
  confidence double precision NOT NULL DEFAULT 0.7,
  verified boolean NOT NULL DEFAULT false,
  source text NOT NULL DEFAULT 'agent',
  hit_count bigint NOT NULL DEFAULT 0,
  created_at double precision NOT NULL DEFAULT 0,
  updated_at double precision NOT NULL DEFAULT 0,
  last_used_at double precision NOT NULL DEFAULT 0,
  expire_at double precision NOT NULL DEFAULT 0,
  pinned boolean NOT NULL DEFAULT false,
  status text NOT NULL DEFAULT 'active',
  stale_reason text NOT NULL DEFAULT '',
  session_id text NOT NULL DEFAULT '',
  search_text text NOT NULL DEFAULT '',
  -- Who wrote the item and who may see it: what row-level security will key on.
  author text NOT NULL DEFAULT current_user,
  visibility text NOT NULL DEFAULT 'team' CHECK (visibility IN ('private', 'team')),
  -- Order of first insertion: ties in ranking fall back to it, as they do in the embedded store.
  ord bigint GENERATED ALWAYS AS IDENTITY,
  search_tsv tsvector GENERATED ALWAYS AS (graphmem_words(search_text)) STORED
);
CREATE INDEX items_project_created ON items (project, created_at DESC);
CREATE INDEX items_session ON items (session_id) WHERE session_id <> '';
CREATE INDEX items_search ON items USING gin (search_tsv);

-- One vector per item, of the model `model` made from the text whose hash is `text_hash`.
CREATE TABLE item_vectors (
  id text PRIMARY KEY,
  vec vector(384) NOT NULL,
  model text NOT NULL DEFAULT '',
  text_hash text NOT NULL DEFAULT ''
);
CREATE INDEX item_vectors_hnsw ON item_vectors USING hnsw (vec vector_cosine_ops);

CREATE TABLE entities (
  id text PRIMARY KEY,
  kind text NOT NULL DEFAULT 'concept',
  name text NOT NULL DEFAULT '',
  path text NOT NULL DEFAULT '',
  qualname text NOT NULL DEFAULT '',
  language text NOT NULL DEFAULT '',
  start_line bigint NOT NULL DEFAULT 0,
  end_line bigint NOT NULL DEFAULT 0,
  hash text NOT NULL DEFAULT '',
  resolved boolean NOT NULL DEFAULT true
);
CREATE INDEX entities_kind ON entities (kind);
CREATE INDEX entities_name ON entities (name);
CREATE INDEX entities_qualname ON entities (qualname);
CREATE INDEX entities_path ON entities (path);

CREATE TABLE observations (
  id text PRIMARY KEY,
  project text NOT NULL DEFAULT '',
  branch text NOT NULL DEFAULT '',
  session_id text NOT NULL DEFAULT '',
  agent text NOT NULL DEFAULT '',
  event text NOT NULL DEFAULT '',
  tool text NOT NULL DEFAULT '',
  command text NOT NULL DEFAULT '',
  text text NOT NULL DEFAULT '',
  files text[] NOT NULL DEFAULT '{}',
  exit_code bigint NOT NULL DEFAULT -1,
  is_error boolean NOT NULL DEFAULT false,
  -- sha256:<hex> of the full tool output kept beside the store (capture/trim.py).
  evidence_ref text NOT NULL DEFAULT '',
  -- The JSON text the op carried (as the embedded store keeps it).
  tool_input text NOT NULL DEFAULT '{}',
  ts double precision NOT NULL DEFAULT 0
);
CREATE INDEX observations_session ON observations (session_id, ts);
CREATE INDEX observations_project ON observations (project);
CREATE INDEX observations_evidence ON observations (evidence_ref) WHERE evidence_ref <> '';

-- Links: deleting either end deletes the link (as DETACH DELETE does in the graph).
CREATE TABLE mentions (
  source text NOT NULL REFERENCES items (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  weight double precision NOT NULL DEFAULT 1.0,
  surface text NOT NULL DEFAULT '',
  PRIMARY KEY (source, target)
);
CREATE INDEX mentions_target ON mentions (target);

CREATE TABLE anchored_to (
  source text NOT NULL REFERENCES items (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  hash text NOT NULL DEFAULT '',
  "commit" text NOT NULL DEFAULT '',
  at double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (source, target)
);
CREATE INDEX anchored_to_target ON anchored_to (target);

CREATE TABLE defined_in (
  source text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  PRIMARY KEY (source, target)
);
CREATE INDEX defined_in_target ON defined_in (target);

CREATE TABLE contains (
  source text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  PRIMARY KEY (source, target)
);
CREATE INDEX contains_target ON contains (target);

CREATE TABLE imports (
  source text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  PRIMARY KEY (source, target)
);
CREATE INDEX imports_target ON imports (target);

CREATE TABLE touches (
  source text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  PRIMARY KEY (source, target)
);
CREATE INDEX touches_target ON touches (target);

CREATE TABLE derived_from (
  source text NOT NULL REFERENCES items (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
  PRIMARY KEY (source, target)
);
CREATE INDEX derived_from_target ON derived_from (target);

CREATE TABLE supersedes (
  source text NOT NULL REFERENCES items (id) ON DELETE CASCADE,
  target text NOT NULL REFERENCES items (id) ON DELETE CASCADE,
  at double precision NOT NULL DEFAULT 0,
  surface text NOT NULL DEFAULT '',
  PRIMARY KEY (source, target)
);
CREATE INDEX supersedes_target ON supersedes (target);

-- The op log: every op applied, as the journal records it (store/ops.py `record`), with the
-- journal sequence number it had: the audit trail, and what the derived tables are rebuilt from.
CREATE TABLE op_log (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  journal_seq bigint,
  op text NOT NULL,
  record jsonb NOT NULL,
  applied_by text NOT NULL DEFAULT current_user,
  applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX op_log_journal_seq ON op_log (journal_seq);
