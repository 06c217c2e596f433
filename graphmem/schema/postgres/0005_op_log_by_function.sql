-- graphmem on PostgreSQL, migration 5: members write to the op log only through graphmem_log.
--
-- Until now a member with write access could INSERT a record into op_log from psql without
-- applying it, naming a project it has no grant on or items it may not change; the owner's
-- rebuild, not subject to row-level security, would then apply it. Members now hold no INSERT,
-- UPDATE or DELETE on op_log. graphmem_log (SECURITY DEFINER) appends a record as its caller,
-- after checking that every row the op adds, changes or deletes is one the caller may write under
-- the policies of 0003; graphmem_relog lets a member narrow or drop its own records (a forget),
-- never add to them. So the op log holds nothing a member could not have done to the tables
-- itself, and the owner's rebuild gives no one more than their grants.

-- Whether role `who` (or a group role it belongs to) may write `project`.
CREATE FUNCTION graphmem_role_can_write(who name, project text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM project_grants g JOIN pg_roles r ON r.rolname = g.member
                       WHERE g.project = $2 AND g.access = 'write'
                       AND pg_has_role($1, r.oid, 'MEMBER')) $$;

-- Whether role `who` may change this existing item (items_change of 0003, for that role).
CREATE FUNCTION graphmem_role_can_change(who name, item text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM items i WHERE i.id = $2
                       AND graphmem_role_can_write($1, i.project)
                       AND (i.visibility = 'team' OR i.author = $1)) $$;

-- Roles the policies do not narrow: superusers, BYPASSRLS roles, the tables' owner and its members.
CREATE FUNCTION graphmem_role_unbound(who name) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = $1
                       AND (r.rolsuper OR r.rolbypassrls OR pg_has_role($1,
                            (SELECT c.relowner FROM pg_class c WHERE c.oid = 'op_log'::regclass),
                            'USAGE'))) $$;

-- Why role `who` may not log this op record (NULL: it may): each item id an op changes must be an
-- item it may change; items and observations it adds must be of projects it may write; entities
-- and code links, shared by the project's members, need write access to some project.
CREATE FUNCTION graphmem_op_refused(who name, entry jsonb) RETURNS text LANGUAGE plpgsql STABLE
  AS $$
DECLARE
  op text := entry ->> 'op';
  rows jsonb := coalesce(entry -> 'rows', '[]');
  ids text[] := ARRAY(SELECT jsonb_array_elements_text(coalesce(entry -> 'ids', '[]')));
  bad text;
BEGIN
  IF jsonb_typeof(rows) <> 'array' OR jsonb_typeof(coalesce(entry -> 'ids', '[]')) <> 'array' THEN
    RETURN format('a %s record whose rows or ids are not a list', op);
  END IF;
  IF op = 'put_items' THEN
    SELECT r ->> 'id' INTO bad FROM jsonb_array_elements(rows) r
      WHERE NOT graphmem_role_can_write(who, coalesce(r ->> 'project', ''))
         OR (EXISTS (SELECT 1 FROM items i WHERE i.id = r ->> 'id')
             AND NOT graphmem_role_can_change(who, r ->> 'id'))
      LIMIT 1;
    RETURN CASE WHEN bad IS NOT NULL THEN format('item %s of a project it may not write', bad) END;
  ELSIF op IN ('update_items', 'delete_items', 'set_item_status', 'bump_items', 'put_vectors') THEN
    SELECT x INTO bad FROM (SELECT r ->> 'id' FROM jsonb_array_elements(rows) r
                            UNION ALL SELECT unnest(ids)) AS named(x)
      WHERE x IS NULL OR NOT graphmem_role_can_change(who, x) LIMIT 1;
    IF bad IS NULL AND entry -> 'fields' ? 'project'
       AND NOT graphmem_role_can_write(who, entry -> 'fields' ->> 'project') THEN
      bad := entry -> 'fields' ->> 'project';
    END IF;
    RETURN CASE WHEN bad IS NOT NULL THEN format('item %s, which it may not change', bad) END;
  ELSIF op = 'put_observations' THEN
    SELECT r ->> 'id' INTO bad FROM jsonb_array_elements(rows) r
      WHERE NOT graphmem_role_can_write(who, coalesce(r ->> 'project', ''))
         OR EXISTS (SELECT 1 FROM observations o WHERE o.id = r ->> 'id' AND o.author <> who)
      LIMIT 1;
    RETURN CASE WHEN bad IS NOT NULL THEN format('observation %s, which it may not write', bad) END;
  ELSIF op = 'delete_observations' THEN
    SELECT x INTO bad FROM unnest(ids) x WHERE NOT EXISTS (
      SELECT 1 FROM observations o WHERE o.id = x AND o.author = who
      AND graphmem_role_can_write(who, o.project)) LIMIT 1;
    RETURN CASE WHEN bad IS NOT NULL THEN format('observation %s, which it may not delete', bad) END;
  ELSIF op IN ('put_links', 'delete_links')
        AND entry ->> 'kind' IN ('MENTIONS', 'ANCHORED_TO', 'DERIVED_FROM', 'SUPERSEDES') THEN
    SELECT x INTO bad FROM (SELECT r ->> 'source' FROM jsonb_array_elements(rows) r
                            UNION ALL SELECT jsonb_array_elements_text(
                              coalesce(entry -> 'sources', '[]'))) AS named(x)
      WHERE x IS NULL OR NOT graphmem_role_can_change(who, x) LIMIT 1;
    RETURN CASE WHEN bad IS NOT NULL THEN format('links of item %s, which it may not change', bad) END;
  ELSIF op IN ('put_links', 'delete_links', 'put_entities', 'delete_entities') THEN
    IF NOT EXISTS (SELECT 1 FROM project_grants g WHERE graphmem_role_can_write(who, g.project)) THEN
      RETURN 'entities or code links, and it may write no project';
    END IF;
    RETURN NULL;
  ELSIF op = 'compact' THEN
    RETURN NULL;
  END IF;
  RETURN format('an op graphmem does not know (%s)', coalesce(op, 'none'));
END $$;

-- Append one op record as role `who` (the caller: the default is evaluated as the caller) with the
-- visibility of the items it adds; `number`: its sequence number (past the last; a migration
-- keeping an embedded journal's numbers), NULL for the next. Takes the write lock (held to
-- commit, as graphmem's appends do) so that the op log's order is the order of commits.
CREATE FUNCTION graphmem_log(entry jsonb, audience text DEFAULT 'team', number bigint DEFAULT NULL,
                             who name DEFAULT current_user)
  RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
  AS $$
DECLARE
  refused text;
  last bigint;
  logged bigint;
BEGIN
  IF who <> session_user AND NOT pg_has_role(session_user, who, 'MEMBER') THEN
    RAISE EXCEPTION 'graphmem_log: % may not write as %', session_user, who
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM pg_advisory_xact_lock(444301403511);
  IF NOT graphmem_role_unbound(who) THEN
    refused := graphmem_op_refused(who, entry);
    IF refused IS NOT NULL THEN
      RAISE EXCEPTION 'graphmem_log: % may not log %', who, refused
        USING ERRCODE = 'insufficient_privilege';
    END IF;
  END IF;
  IF number IS NULL THEN
    INSERT INTO op_log (op, record, visibility, applied_by)
      VALUES (entry ->> 'op', entry, audience, who) RETURNING seq INTO logged;
    RETURN logged;
  END IF;
  SELECT coalesce(max(o.seq), 0) INTO last FROM op_log o;
  IF number <= last THEN
    RAISE EXCEPTION 'op log sequence number % is not past the last one, %', number, last
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO op_log (seq, op, record, visibility, applied_by) OVERRIDING SYSTEM VALUE
    VALUES (number, entry ->> 'op', entry, audience, who);
  PERFORM setval(pg_get_serial_sequence('op_log', 'seq'), number);
  RETURN number;
END $$;

-- Whether `narrow` holds only what `wide` holds: the same op and keys, each list's elements
-- among the same list's elements of `wide`, every other value equal (a record after a forget).
CREATE FUNCTION graphmem_record_within(narrow jsonb, wide jsonb) RETURNS boolean LANGUAGE sql
  IMMUTABLE AS $$
    SELECT NOT EXISTS (
      SELECT 1 FROM jsonb_each($1) n
      WHERE NOT ($2 ? n.key) OR CASE
        WHEN jsonb_typeof(n.value) = 'array' AND jsonb_typeof($2 -> n.key) = 'array'
          THEN EXISTS (SELECT 1 FROM jsonb_array_elements(n.value) e WHERE NOT EXISTS
                       (SELECT 1 FROM jsonb_array_elements($2 -> n.key) w WHERE w = e))
        ELSE n.value <> $2 -> n.key END) $$;

-- Replace one of role `who`'s own op log records by a narrower one (`entry`, see
-- graphmem_record_within), or drop it (`entry` NULL): what a member's forget does to its records.
CREATE FUNCTION graphmem_relog(number bigint, entry jsonb, who name DEFAULT current_user)
  RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
  AS $$
DECLARE
  held op_log%ROWTYPE;
BEGIN
  IF who <> session_user AND NOT pg_has_role(session_user, who, 'MEMBER') THEN
    RAISE EXCEPTION 'graphmem_relog: % may not write as %', session_user, who
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT * INTO held FROM op_log o WHERE o.seq = number FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF held.applied_by <> who AND NOT graphmem_role_unbound(who) THEN
    RAISE EXCEPTION 'graphmem_relog: op log record % is not one % wrote', number, who
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF entry IS NULL THEN
    DELETE FROM op_log o WHERE o.seq = number;
  ELSIF graphmem_record_within(entry, held.record) OR graphmem_role_unbound(who) THEN
    UPDATE op_log o SET record = entry WHERE o.seq = number;
  ELSE
    RAISE EXCEPTION 'graphmem_relog: the new record % holds what the old one did not', number
      USING ERRCODE = 'insufficient_privilege';
  END IF;
END $$;

REVOKE EXECUTE ON FUNCTION graphmem_log(jsonb, text, bigint, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION graphmem_relog(bigint, jsonb, name) FROM PUBLIC;

-- Members granted before this migration keep no way to write the op log but these functions.
DO $$
DECLARE
  m record;
BEGIN
  FOR m IN SELECT DISTINCT g.member FROM project_grants g JOIN pg_roles r ON r.rolname = g.member
  LOOP
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON op_log FROM %I', m.member);
    EXECUTE format('REVOKE USAGE ON SEQUENCE op_log_seq_seq FROM %I', m.member);
    EXECUTE format('GRANT EXECUTE ON FUNCTION graphmem_log(jsonb, text, bigint, name), '
                   'graphmem_relog(bigint, jsonb, name) TO %I', m.member);
  END LOOP;
END $$;

-- As in 0003, less any privilege on op_log beyond reading the records the role wrote.
CREATE OR REPLACE FUNCTION graphmem_grant(member name, project text, access text DEFAULT 'read')
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  graph text := 'items, item_vectors, entities, observations, mentions, anchored_to, defined_in, '
                'contains, imports, touches, derived_from, supersedes';
BEGIN
  IF $3 NOT IN ('read', 'write') THEN
    RAISE EXCEPTION 'access is read or write, not %', $3;
  END IF;
  INSERT INTO project_grants AS g VALUES ($2, $1, $3)
    ON CONFLICT ON CONSTRAINT project_grants_pkey DO UPDATE SET access = EXCLUDED.access;
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), $1);
  EXECUTE format('GRANT SELECT ON %s, op_log, meta, schema_migrations, project_grants TO %I',
                 graph, $1);
  EXECUTE format('GRANT EXECUTE ON FUNCTION graphmem_traces(text[]) TO %I', $1);
  IF $3 = 'write' THEN
    EXECUTE format('GRANT INSERT, UPDATE, DELETE ON %s TO %I', graph, $1);
    EXECUTE format('GRANT USAGE ON SEQUENCE items_ord_seq TO %I', $1);
    EXECUTE format('GRANT EXECUTE ON FUNCTION graphmem_log(jsonb, text, bigint, name), '
                   'graphmem_relog(bigint, jsonb, name) TO %I', $1);
  END IF;
END $$;
