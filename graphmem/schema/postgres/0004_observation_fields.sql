-- An observation's working directory, transcript path and the hook's other fields are columns,
-- as in the embedded store's schema 2 (they rode inside tool_input under reserved keys).
ALTER TABLE observations
  ADD COLUMN cwd text NOT NULL DEFAULT '',
  ADD COLUMN transcript_path text NOT NULL DEFAULT '',
  ADD COLUMN extra text NOT NULL DEFAULT '{}';

UPDATE observations SET
  cwd = coalesce(tool_input::jsonb ->> '_cwd', cwd),
  transcript_path = coalesce(tool_input::jsonb ->> '_transcript_path', transcript_path),
  extra = coalesce((tool_input::jsonb -> '_extra')::text, extra),
  tool_input = (tool_input::jsonb - '_cwd' - '_transcript_path' - '_extra')::text
WHERE tool_input::jsonb ?| array['_cwd', '_transcript_path', '_extra'];
