-- graphmem on PostgreSQL, migration 2: the op log is the store's journal. Every write appends its
-- op here and applies it in the same transaction; `seq` is the journal sequence number, shared
-- by every machine that writes to the server, so no local journal or number is kept beside it.
-- `record` holds the op as a journal record does, with the actor (`by`), the client request
-- (`req`) and the time (`ts`).
ALTER TABLE op_log DROP COLUMN journal_seq;
DELETE FROM meta WHERE key = 'applied_seq';
COMMENT ON TABLE op_log IS 'graphmem''s journal: every op, in the order the tables changed';
