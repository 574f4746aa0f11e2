-- chokepoint database, schema version 3: a view that gives each sample its
-- whole details JSON, with the driver's "properties" object that schema 2
-- stores once per run (sample_props) put back, so hand-written queries such
-- as json_extract(details_json, '$.properties.dialect') read it as stored
-- before schema 2. Only the view is new; no table changes.
CREATE VIEW sample_details AS
SELECT s.id, s.stage_id, s.run_id, s.seq, s.op, s.size, s.bytes, s.seconds, s.started_at,
       s.cache_possible, s.error,
       CASE WHEN s.props_idx < 0 OR p.json IS NULL THEN s.details_json
            ELSE json_set(CASE WHEN s.details_json = '' THEN '{}' ELSE s.details_json END,
                          '$.properties', json(p.json))
       END AS details_json
FROM samples s
LEFT JOIN sample_props p ON p.run_id = s.run_id AND p.idx = s.props_idx;
