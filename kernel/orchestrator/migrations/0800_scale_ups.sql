-- Scale-ups (kernel/orchestrator/scaling): one row per agent a scaler was asked to start for a
-- queued job no online agent could take. The row is what keeps a job from being scaled up twice
-- (the partial unique index, across every node on this database), what the per-scaler limits
-- count (agents alive, starts in the last minute), and what operators read to see what the
-- scalers did and why an agent was reaped.
--
-- state: starting  asked, the agent has not registered yet
--        connected registered, has not taken a job
--        busy      took its one job (ephemeral)
--        exited    ended by itself (after its job, or before taking one)
--        reaped    stopped by the orchestrator (idle past idleTimeoutMs, orphaned, scaler removed)
--        failed    the scaler started nothing (at capacity, or scaleUp threw: see reason)
CREATE TABLE scale_ups (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  scaler        text NOT NULL,
  plugin        text NOT NULL,
  -- The node whose plugin instance started (and alone can stop) the agent.
  node_id       text NOT NULL,
  job_id        uuid REFERENCES jobs(id) ON DELETE SET NULL,
  agent_id      text,
  labels        text[] NOT NULL,
  state         text NOT NULL DEFAULT 'starting'
                CHECK (state IN ('starting', 'connected', 'busy', 'exited', 'reaped', 'failed')),
  reason        text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  connected_at  timestamptz,
  busy_at       timestamptz,
  ended_at      timestamptz
);

-- A job has at most one scale-up waiting for its agent.
CREATE UNIQUE INDEX scale_ups_one_waiting_per_job ON scale_ups (job_id) WHERE state IN ('starting', 'connected');
CREATE UNIQUE INDEX scale_ups_agent ON scale_ups (agent_id) WHERE agent_id IS NOT NULL;
CREATE INDEX scale_ups_live ON scale_ups (scaler, state) WHERE state IN ('starting', 'connected', 'busy');
CREATE INDEX scale_ups_recent ON scale_ups (scaler, created_at);
