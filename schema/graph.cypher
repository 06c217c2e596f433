// graphmem graph schema, version 2. Applied statement by statement (split on ';').
// Entities share one node table keyed "kind:key" so one batch writes every kind and
// neighbourhood queries need no label unions; `kind` says what the node is.
CREATE NODE TABLE IF NOT EXISTS Meta(key STRING, value STRING, PRIMARY KEY(key));
CREATE NODE TABLE IF NOT EXISTS Item(
  id STRING, project STRING, branch STRING, kind STRING, title STRING, body STRING,
  tags STRING[], importance DOUBLE, confidence DOUBLE, verified BOOLEAN, source STRING,
  hit_count INT64, created_at DOUBLE, updated_at DOUBLE, last_used_at DOUBLE, expire_at DOUBLE,
  pinned BOOLEAN, status STRING, stale_reason STRING, session_id STRING, search_text STRING,
  PRIMARY KEY(id));
CREATE NODE TABLE IF NOT EXISTS ItemVector(id STRING, vec FLOAT[384], model STRING, text_hash STRING, PRIMARY KEY(id));
CREATE NODE TABLE IF NOT EXISTS Entity(
  id STRING, kind STRING, name STRING, path STRING, qualname STRING, language STRING,
  start_line INT64, end_line INT64, hash STRING, resolved BOOLEAN, PRIMARY KEY(id));
CREATE NODE TABLE IF NOT EXISTS Observation(
  id STRING, project STRING, branch STRING, session_id STRING, agent STRING, event STRING,
  tool STRING, command STRING, text STRING, files STRING[], exit_code INT64, is_error BOOLEAN,
  evidence_ref STRING, tool_input STRING, ts DOUBLE, cwd STRING, transcript_path STRING,
  extra STRING, PRIMARY KEY(id));
CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Item TO Entity, weight DOUBLE, surface STRING);
CREATE REL TABLE IF NOT EXISTS ANCHORED_TO(FROM Item TO Entity, hash STRING, commit STRING, at DOUBLE);
CREATE REL TABLE IF NOT EXISTS DEFINED_IN(FROM Entity TO Entity);
CREATE REL TABLE IF NOT EXISTS CONTAINS(FROM Entity TO Entity);
CREATE REL TABLE IF NOT EXISTS IMPORTS(FROM Entity TO Entity);
CREATE REL TABLE IF NOT EXISTS TOUCHES(FROM Entity TO Entity);
CREATE REL TABLE IF NOT EXISTS DERIVED_FROM(FROM Item TO Observation);
CREATE REL TABLE IF NOT EXISTS SUPERSEDES(FROM Item TO Item, at DOUBLE, surface STRING);
