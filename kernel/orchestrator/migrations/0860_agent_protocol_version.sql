-- The wire protocol each agent registered with (agent.register `protocolVersion`): a job whose
-- dispatch carries a field newer than an agent's protocol (checkout.submodules, checkout.lfs,
-- container.options, install) is never given to it, and fails at once naming it when every agent
-- carrying the job's labels is that old (kernel/orchestrator/dispatch/protocol-gap.ts). Null on
-- rows an orchestrator without this column wrote: not held against the agent.
ALTER TABLE agents ADD COLUMN protocol_version integer;
