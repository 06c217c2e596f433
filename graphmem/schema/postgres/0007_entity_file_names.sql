-- graphmem on PostgreSQL, migration 7: code entities found by a path suffix through an index.
--
-- A search resolves the files it is given or names ("router.py", "src/tls/router.py") to the
-- entities whose path is that suffix, and reaches the symbols inside those files the same way.
-- No index answered "path ends with /router.py": each lookup read every entity (32 ms at 100k
-- items, several per search). A path ending with a suffix ends with the suffix's last component,
-- so an index on that component narrows the lookup to the few paths sharing it.
CREATE INDEX entities_file_name ON entities (regexp_replace(path, '^.*/', '')) WHERE path <> '';
