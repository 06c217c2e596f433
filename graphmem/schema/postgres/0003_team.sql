-- graphmem on PostgreSQL, migration 3: a team on one server, its access enforced by the database.
--
-- A role may read or write a project when project_grants says so (for the role itself or a
-- group role it belongs to). Row-level security keys every table that holds what an item says on
-- that and on current_user: an item is seen by readers of its project when its visibility is
-- 'team', and only by its author when 'private'; it is added, changed or deleted only by writers
-- of its project (a private one only by its author). Vectors and item links follow their item;
-- observations (raw session events) are seen by their author, and by readers of the project when
-- a visible item derives from them; each op log record only by the role that applied it. Entities
-- and code links (file and symbol names, the vocabulary of the code) are shared by all members.
-- The tables' owner (who ran the migrations) is not subject to these policies: it grants, and
-- rebuilds from the whole op log.
CREATE TABLE project_grants (
  project text NOT NULL,
  member name NOT NULL,
  access text NOT NULL CHECK (access IN ('read', 'write')),
  PRIMARY KEY (project, member)
);

CREATE FUNCTION graphmem_can_read(project text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM project_grants g JOIN pg_roles r ON r.rolname = g.member
                       WHERE g.project = $1 AND pg_has_role(r.oid, 'MEMBER')) $$;
CREATE FUNCTION graphmem_can_write(project text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM project_grants g JOIN pg_roles r ON r.rolname = g.member
                       WHERE g.project = $1 AND g.access = 'write'
                       AND pg_has_role(r.oid, 'MEMBER')) $$;
-- Whether the current role may change this item (it sees it, and may write its project).
CREATE FUNCTION graphmem_item_writable(item text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM items i WHERE i.id = $1 AND graphmem_can_write(i.project)) $$;

-- Who wrote each observation; the visibility each op log record gave the items it added.
ALTER TABLE observations ADD COLUMN author text NOT NULL DEFAULT current_user;
ALTER TABLE op_log ADD COLUMN visibility text NOT NULL DEFAULT 'team'
  CHECK (visibility IN ('private', 'team'));

ALTER TABLE project_grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_grants ON project_grants FOR SELECT
  USING (member IN (SELECT rolname FROM pg_roles WHERE pg_has_role(oid, 'MEMBER')));

ALTER TABLE items ENABLE ROW LEVEL SECURITY;
CREATE POLICY items_read ON items FOR SELECT
  USING (graphmem_can_read(project) AND (visibility = 'team' OR author = current_user));
CREATE POLICY items_add ON items FOR INSERT
  WITH CHECK (graphmem_can_write(project) AND author = current_user);
CREATE POLICY items_change ON items FOR UPDATE
  USING (graphmem_can_write(project) AND (visibility = 'team' OR author = current_user))
  WITH CHECK (graphmem_can_write(project) AND (visibility = 'team' OR author = current_user));
CREATE POLICY items_delete ON items FOR DELETE
  USING (graphmem_can_write(project) AND (visibility = 'team' OR author = current_user));

-- Tables whose rows belong to the item named in `key`: seen with it, changed by its writers.
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('item_vectors', 'id'), ('mentions', 'source'),
                                 ('anchored_to', 'source'), ('derived_from', 'source'),
                                 ('supersedes', 'source')) AS v(name, key) LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t.name);
    EXECUTE format('CREATE POLICY %I ON %I FOR SELECT USING '
                   '(EXISTS (SELECT 1 FROM items i WHERE i.id = %I.%I))', t.name || '_read', t.name,
                   t.name, t.key);
    EXECUTE format('CREATE POLICY %I ON %I FOR INSERT WITH CHECK (graphmem_item_writable(%I))',
                   t.name || '_add', t.name, t.key);
    EXECUTE format('CREATE POLICY %I ON %I FOR UPDATE USING (graphmem_item_writable(%I))',
                   t.name || '_change', t.name, t.key);
    EXECUTE format('CREATE POLICY %I ON %I FOR DELETE USING (graphmem_item_writable(%I))',
                   t.name || '_delete', t.name, t.key);
  END LOOP;
END $$;

ALTER TABLE observations ENABLE ROW LEVEL SECURITY;
CREATE POLICY observations_read ON observations FOR SELECT
  USING (author = current_user OR (graphmem_can_read(project) AND EXISTS
         (SELECT 1 FROM derived_from d WHERE d.target = observations.id)));
CREATE POLICY observations_add ON observations FOR INSERT
  WITH CHECK (author = current_user AND graphmem_can_write(project));
CREATE POLICY observations_change ON observations FOR UPDATE
  USING (author = current_user AND graphmem_can_write(project));
CREATE POLICY observations_delete ON observations FOR DELETE
  USING (author = current_user AND graphmem_can_write(project));

ALTER TABLE op_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_ops ON op_log USING (applied_by = current_user)
  WITH CHECK (applied_by = current_user);

-- How many traces of these ids are left anywhere, whoever wrote them: rows with these ids, and op
-- log records naming one (as ops name ids: row ids, link ends, id lists). A forget checks it is
-- 0 before it commits, so a member never half-forgets what other members' records still hold.
-- Counts only, of ids the caller names: it shows no text.
CREATE FUNCTION graphmem_traces(ids text[]) RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path FROM CURRENT
  AS $$
    SELECT (SELECT count(*) FROM op_log o WHERE EXISTS (SELECT 1 FROM unnest($1) x WHERE
              o.record -> 'rows' @> jsonb_build_array(jsonb_build_object('id', x))
              OR o.record -> 'rows' @> jsonb_build_array(jsonb_build_object('source', x))
              OR o.record -> 'rows' @> jsonb_build_array(jsonb_build_object('target', x))
              OR o.record -> 'ids' ? x OR o.record -> 'sources' ? x OR o.record -> 'targets' ? x))
         + (SELECT count(*) FROM items WHERE id = ANY($1))
         + (SELECT count(*) FROM item_vectors WHERE id = ANY($1))
         + (SELECT count(*) FROM observations WHERE id = ANY($1))
         + (SELECT count(*) FROM entities WHERE id = ANY($1)) $$;

-- Grant a role (a user, or a group role: its members get the access) 'read' or 'write' on a
-- project; run by the tables' owner. Table privileges are what graphmem's statements need; the
-- policies above narrow them to the granted projects. A role granted only 'read' anywhere gets
-- no INSERT, UPDATE or DELETE.
CREATE FUNCTION graphmem_grant(member name, project text, access text DEFAULT 'read')
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  graph text := 'items, item_vectors, entities, observations, mentions, anchored_to, defined_in, '
                'contains, imports, touches, derived_from, supersedes, op_log';
BEGIN
  IF $3 NOT IN ('read', 'write') THEN
    RAISE EXCEPTION 'access is read or write, not %', $3;
  END IF;
  INSERT INTO project_grants AS g VALUES ($2, $1, $3)
    ON CONFLICT ON CONSTRAINT project_grants_pkey DO UPDATE SET access = EXCLUDED.access;
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), $1);
  EXECUTE format('GRANT SELECT ON %s, meta, schema_migrations, project_grants TO %I', graph, $1);
  EXECUTE format('GRANT EXECUTE ON FUNCTION graphmem_traces(text[]) TO %I', $1);
  IF $3 = 'write' THEN
    EXECUTE format('GRANT INSERT, UPDATE, DELETE ON %s TO %I', graph, $1);
    EXECUTE format('GRANT USAGE ON SEQUENCE op_log_seq_seq, items_ord_seq TO %I', $1);
  END IF;
END $$;

-- Take a role's access to a project away (its table privileges stay: without a grant, the
-- policies let it see and change nothing of the project).
CREATE FUNCTION graphmem_revoke(member name, project text) RETURNS void LANGUAGE sql
  AS $$ DELETE FROM project_grants g WHERE g.project = $2 AND g.member = $1 $$;

REVOKE EXECUTE ON FUNCTION graphmem_traces(text[]) FROM PUBLIC;
