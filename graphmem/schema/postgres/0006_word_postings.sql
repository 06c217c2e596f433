-- graphmem on PostgreSQL, migration 6: keyword search by BM25 that reads a bounded number of rows.
--
-- ts_rank has no inverse document frequency, and ranking every item that holds a query word is
-- linear in the store. Writes to items now keep, through statement triggers:
--   item_words   one posting per (item, word): the word's count in the item, the item's length
--                in words, and its impact (the BM25 term-frequency part for an average length of
--                20 words: a key fixed when written, so equal postings stay equal as the store's
--                average moves; a search scores with the average of the moment), indexed so a
--                search reads each word's postings best first and stops after a few;
--   word_counts  how many items hold each word (the IDF's document frequency);
--   item_counts  items and their summed length (the IDF's N, the average length, the timeline's
--                count).
-- Counts are kept per (project, author, visibility) so that row-level security shows each role the
-- counts of exactly the items it sees. Members hold SELECT only: the trigger functions write as
-- the tables' owner, and only what a write to items (which the policies of 0003 allow) implies.

-- BM25 (k1 1.2, b 0.75, as store/keywords.py): a word's weight in an item, and its IDF.
CREATE FUNCTION graphmem_impact(tf integer, length integer, average float8) RETURNS float8
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / greatest(average, 1))) $$;
CREATE FUNCTION graphmem_idf(held float8, documents float8) RETURNS float8
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT ln(1 + (documents - held + 0.5) / (held + 0.5)) $$;

CREATE TABLE item_words (
  item text NOT NULL,
  word text NOT NULL,
  project text NOT NULL,
  author text NOT NULL,
  visibility text NOT NULL,
  tf integer NOT NULL,
  length integer NOT NULL,
  impact real NOT NULL,
  ord bigint NOT NULL,
  PRIMARY KEY (item, word)
);
-- Equal impacts in the items' order, as ranking breaks ties.
CREATE INDEX item_words_best ON item_words (project, word, impact DESC, ord);

CREATE TABLE word_counts (
  word text NOT NULL,
  project text NOT NULL,
  author text NOT NULL,
  visibility text NOT NULL,
  items bigint NOT NULL,
  PRIMARY KEY (word, project, author, visibility)
);

CREATE TABLE item_counts (
  project text NOT NULL,
  author text NOT NULL,
  visibility text NOT NULL,
  items bigint NOT NULL,
  length bigint NOT NULL,
  PRIMARY KEY (project, author, visibility)
);

-- What the word tables keep of an item.
CREATE TYPE graphmem_item_words AS (id text, project text, author text, visibility text, ord bigint,
                                    words tsvector);

-- Add (sign 1) or take out (sign -1) the words of these items.
CREATE FUNCTION graphmem_index_words(changed graphmem_item_words[], sign integer) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  IF cardinality(changed) = 0 THEN
    RETURN;
  END IF;
  IF sign < 0 THEN
    DELETE FROM item_words w USING unnest(changed) c WHERE w.item = c.id;
  END IF;
  WITH held AS MATERIALIZED (
    SELECT c.id, c.project, c.author, c.visibility, c.ord, u.lexeme AS word,
           cardinality(u.positions) AS tf
    FROM unnest(changed) c LEFT JOIN LATERAL unnest(c.words) u ON true),
  lengths AS MATERIALIZED (
    SELECT id, project, author, visibility, coalesce(sum(tf), 0)::integer AS length
    FROM held GROUP BY 1, 2, 3, 4),
  counted AS (
    INSERT INTO item_counts AS t
      SELECT project, author, visibility, sign * count(*), sign * sum(length)
      FROM lengths GROUP BY 1, 2, 3
      ON CONFLICT (project, author, visibility)
      DO UPDATE SET items = t.items + EXCLUDED.items, length = t.length + EXCLUDED.length),
  words AS (
    INSERT INTO word_counts AS t
      SELECT word, project, author, visibility, sign * count(*)
      FROM held WHERE word IS NOT NULL GROUP BY 1, 2, 3, 4
      ON CONFLICT (word, project, author, visibility) DO UPDATE SET items = t.items + EXCLUDED.items)
  INSERT INTO item_words
    SELECT h.id, h.word, h.project, h.author, h.visibility, h.tf, l.length,
           graphmem_impact(h.tf, l.length, 20), h.ord
    FROM held h JOIN lengths l USING (id) WHERE sign > 0 AND h.word IS NOT NULL;
  IF sign < 0 THEN
    DELETE FROM word_counts t USING unnest(changed) c, unnest(c.words) u
      WHERE t.word = u.lexeme AND t.project = c.project AND t.items <= 0;
    DELETE FROM item_counts t USING unnest(changed) c
      WHERE t.project = c.project AND t.items <= 0;
  END IF;
END $$;

CREATE FUNCTION graphmem_words_of(i items) RETURNS graphmem_item_words LANGUAGE sql IMMUTABLE
  AS $$ SELECT ($1.id, $1.project, $1.author, $1.visibility, $1.ord, $1.search_tsv)::graphmem_item_words $$;

CREATE FUNCTION graphmem_items_added() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM graphmem_index_words(ARRAY(SELECT graphmem_words_of(n::items) FROM added n), 1);
  RETURN NULL;
END $$;

CREATE FUNCTION graphmem_items_removed() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM graphmem_index_words(ARRAY(SELECT graphmem_words_of(o::items) FROM removed o), -1);
  RETURN NULL;
END $$;

-- Only items whose words or ownership changed are indexed again (use counts change often).
CREATE FUNCTION graphmem_items_changed() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  was graphmem_item_words[];
  now graphmem_item_words[];
BEGIN
  SELECT array_agg(m.was), array_agg(m.now) INTO was, now
    FROM (SELECT graphmem_words_of(o::items) AS was, graphmem_words_of(n::items) AS now
          FROM removed o JOIN added n USING (id)) m
    WHERE m.was IS DISTINCT FROM m.now;
  PERFORM graphmem_index_words(coalesce(was, '{}'), -1);
  PERFORM graphmem_index_words(coalesce(now, '{}'), 1);
  RETURN NULL;
END $$;

CREATE TRIGGER items_words_added AFTER INSERT ON items REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION graphmem_items_added();
CREATE TRIGGER items_words_removed AFTER DELETE ON items REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION graphmem_items_removed();
CREATE TRIGGER items_words_changed AFTER UPDATE ON items
  REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION graphmem_items_changed();

-- A rebuild truncates items: the derived tables go with them.
CREATE FUNCTION graphmem_items_truncated() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  TRUNCATE item_words, word_counts, item_counts;
  RETURN NULL;
END $$;
CREATE TRIGGER items_words_truncated AFTER TRUNCATE ON items
  FOR EACH STATEMENT EXECUTE FUNCTION graphmem_items_truncated();

SELECT graphmem_index_words(ARRAY(SELECT graphmem_words_of(i) FROM items i), 1);

-- Keyword search and counts read these now.
DROP INDEX items_search;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['item_words', 'word_counts', 'item_counts'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY %I ON %I FOR SELECT USING (graphmem_can_read(project) '
                   'AND (visibility = ''team'' OR author = current_user))', t || '_read', t);
  END LOOP;
END $$;

-- Members read the word tables (the policies above narrow the rows); graphmem_grant of 0005 stays
-- as it was, under another name, and grants them too.
DO $$
DECLARE
  m record;
BEGIN
  FOR m IN SELECT DISTINCT member FROM project_grants LOOP
    EXECUTE format('GRANT SELECT ON item_words, word_counts, item_counts TO %I', m.member);
  END LOOP;
END $$;

ALTER FUNCTION graphmem_grant(name, text, text) RENAME TO graphmem_grant_graph;
CREATE FUNCTION graphmem_grant(member name, project text, access text DEFAULT 'read')
  RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM graphmem_grant_graph($1, $2, $3);
  EXECUTE format('GRANT SELECT ON item_words, word_counts, item_counts TO %I', $1);
END $$;
