-- Why an agent does not offer a sandbox it has installed (agent.register `unavailableSandboxes`,
-- e.g. docker with no engine answering): the dispatcher names it when a job needs that sandbox
-- and no online agent carrying the job's labels offers it.
ALTER TABLE agents ADD COLUMN unavailable_sandboxes jsonb NOT NULL DEFAULT '[]';

-- The full label set a scaled-up agent must register with (the scaler's auto labels plus its
-- custom labels, the scale-up event's `mandatoryLabels`): registration checks it. Null on rows
-- written before this column existed (nothing is checked for them).
ALTER TABLE scale_ups ADD COLUMN gate text[];
