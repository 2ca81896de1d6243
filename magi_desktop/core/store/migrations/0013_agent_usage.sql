-- Which agents use the memory (architecture §11, Settings -> Agents): calls per MCP client and tool, how many the
-- memory refused, and when. It holds no content: the client's name, the tool, counts, times and the last
-- refusal's reason code or bad field (never the text that was refused).
CREATE TABLE agent_usage (
    usage_id          INTEGER PRIMARY KEY,
    client            TEXT    NOT NULL,        -- the MCP client's clientInfo.name (e.g. "claude-ai")
    tool              TEXT    NOT NULL,        -- memory_query | remember | log_turn | log_tool_run | ...
    calls             INTEGER NOT NULL DEFAULT 0,
    rejections        INTEGER NOT NULL DEFAULT 0,
    last_rejection    TEXT,                    -- a reason code (quote_not_found) or a field (chat.provenance)
    last_rejected_at  REAL,
    first_used_at     REAL    NOT NULL,
    last_used_at      REAL    NOT NULL,
    UNIQUE (client, tool)
);
