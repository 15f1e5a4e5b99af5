// The paths a step may hand ctx.artifacts, through the real step API path: the real step runner
// (agent/runner/main.ts, a child process whose TMPDIR is the job's scratch directory as the
// agent sets it) runs steps whose api.requests go to the agent's handler (handleRunnerApi), which
// talks to a real orchestrator (real PostgreSQL, filesystem storage over HTTP) through a test
// agent's socket. Accepted: the workspace and what ctx.mktemp / ctx.mktempFile made for the job.
// Refused: /etc, `..` out of a temp directory, a symlink from a temp directory to outside.
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { handleRunnerApi, type OrchestratorRequest } from '../../../agent/jobs/runner-api.ts';
import { SecretSet } from '../../../agent/logs/masker.ts';
import type { OrchestratorToAgent } from '../../../schemas/wire/agent.ts';
import { runWithAgents, startArtifactsNode } from '../../fixtures/artifacts-node.ts';
import { eachDatabase, type Test } from '../../fixtures/db.ts';
import { runRunner } from '../../fixtures/run-runner.ts';
import type { TestAgent } from '../../fixtures/test-agent.ts';
import { tempDir } from '../fixtures/trees.ts';

const RESPONSE_OF: Record<string, OrchestratorToAgent['type']> = {
  'artifact.upload.request': 'artifact.upload.response',
  'artifact.commit.request': 'artifact.commit.response',
  'artifact.download.request': 'artifact.download.response',
};

/** The agent's request function over a test agent's real socket. */
function requester(agent: TestAgent): OrchestratorRequest {
  return async (message) => {
    agent.sendRaw(message);
    const type = RESPONSE_OF[message.type];
    if (type === undefined) throw new Error(`no response type for ${message.type}`);
    // A hang guard far above any answer time on a busy machine.
    return agent.waitFor(type, (m) => (m as { requestId?: string }).requestId === message.requestId, 300_000);
  };
}

/** Runs job `jobName` of the fixture in the real runner, its api.requests served by the agent's handler. */
async function runJob(t: Test, jobName: string, jobId: string, agent: TestAgent) {
  const tmp = await tempDir(`svc-artifact-paths-${jobName}-`);
  t.teardown(tmp.cleanup);
  const workspace = join(tmp.dir, 'ws');
  const scratch = join(tmp.dir, 'scratch');
  await mkdir(workspace);
  await mkdir(scratch);
  const context = { jobId, workspace, scratch, secrets: new SecretSet(), request: requester(agent), send: () => undefined, signal: new AbortController().signal };
  const run = await runRunner({
    file: 'artifact-paths.ts',
    workflowName: 'artifact-paths',
    jobName,
    start: { workspace },
    runnerEnv: { TMPDIR: scratch },
    api: (request) => handleRunnerApi(request.api, request.args, context),
    timeoutMs: 300_000,
  });
  t.same(run.invalid, [], 'every runner message matches the wire schema');
  t.equal(run.result?.status, 'completed', run.result?.reason ?? run.stderr);
  return run.result?.outputs as Record<string, string>;
}

await eachDatabase(t, async (t, db) => {
  const node = await startArtifactsNode(t, db.url);
  const { jobs, agents } = await runWithAgents(t, node, db, `paths-${randomUUID().slice(0, 8)}`);

  const produced = await runJob(t, 'produce', jobs.a, agents.a);
  t.equal(produced['files'], '3', 'uploads from the workspace, a ctx.mktemp directory and a ctx.mktempFile file');
  t.equal(produced['linkOut'], 'SVC_ERR_AGENT_API_PATH', 'upload through a symlink from a temp directory to outside: refused');
  t.equal(produced['etc'], 'SVC_ERR_AGENT_API_PATH', 'upload of /etc/hostname: refused');
  t.equal(produced['dotdot'], 'SVC_ERR_AGENT_API_PATH', 'upload of `..` out of a temp directory: refused');

  const consumed = await runJob(t, 'consume', jobs.b, agents.b);
  t.equal(consumed['path'], 'the mktemp directory', 'downloaded into ctx.mktemp()');
  t.equal(consumed['app'], 'console.log(1)\n');
  t.equal(consumed['summary'], 'all green\n', 'a directory below a ctx.mktemp directory');
  t.equal(consumed['etc'], 'SVC_ERR_AGENT_API_PATH', 'download into /etc: refused');
  t.equal(consumed['dotdot'], 'SVC_ERR_AGENT_API_PATH', 'download into `..` of a temp directory: refused');
  t.equal(consumed['linkOut'], 'SVC_ERR_AGENT_API_PATH', 'download through a symlink from a temp directory to outside: refused');
  t.equal(consumed['intoFile'], 'SVC_ERR_AGENT_API_PATH', 'download into a ctx.mktempFile file: refused (not a directory)');
});
