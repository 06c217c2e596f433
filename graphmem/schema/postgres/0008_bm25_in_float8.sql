-- graphmem on PostgreSQL, migration 8: BM25's arithmetic in float8.
--
-- graphmem_impact's literals (2.2, 1.2, 0.25, 0.75) are numeric, so a keyword search's final
-- scoring multiplied and divided in numeric on each of the ~5,000 postings it sums (0.9 µs a row
-- against 0.1 µs in float8). The same formula in float8, as the embedded store computes it.
CREATE OR REPLACE FUNCTION graphmem_impact(tf integer, length integer, average float8)
  RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT tf * 2.2::float8 / (tf + 1.2::float8 * (0.25::float8 + 0.75::float8 * length
                                                       / greatest(average, 1))) $$;
-- The stored impact keys (real) are the float8 formula's: rewritten where a rounding differs.
UPDATE item_words SET impact = graphmem_impact(tf, length, 20)
  WHERE impact <> graphmem_impact(tf, length, 20)::real;
