// The agent with the REAL step runner (agent/runner/main.ts) in the process sandbox, confined by
// bubblewrap when it is installed: a workflow from a restored tree runs, its secret is masked.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../agent/agent.ts';
import { parseAgentEnv } from '../../agent/env.ts';
import { createProcessSandbox } from '../../plugins/sandboxes/process/index.ts';
import { dispatchOf } from './fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: (s) => s.step('hello', async (ctx) => {
        const key = await ctx.secrets.get('API_KEY');
        ctx.log.info('using key ' + key);
        const { stdout } = await ctx.$\`echo from-shell\`;
        ctx.log.info('shell said ' + stdout.trim());
        return {};
      }),
    }),
  },
});
`;

t.test('a real workflow runs through the real step runner', async (t) => {
  const tmp = await tempDir('svc-agent-realrunner-');
  const files = await fileServer();
  const orch = await startOrchestratorDouble();
  t.teardown(async () => {
    await orch.close();
    await files.close();
    await tmp.cleanup();
  });
  const tree = await makeTree(join(tmp.dir, 'a'), { '.svc/workflows/ci.ts': WORKFLOW });
  const digest = await tarball(tree.dir, join(tmp.dir, 's.tar.gz'));
  files.put('s', await readFile(join(tmp.dir, 's.tar.gz')));
  const settings = parseAgentEnv({ SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: join(tmp.dir, 'w') });
  const agent = await startAgent({
    settings,
    agentId: 'real-runner',
    logger: pino({ level: 'silent' }),
    sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'auto', network: true })]]),
    runnerPath: DEFAULT_RUNNER_PATH,
  });
  t.teardown(() => agent.stop());
  const d = dispatchOf({ sourceTarUrl: files.url('s'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: {}, secrets: { API_KEY: 'sk_real_runner_secret' } } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
  const text = orch.received.flatMap((m) => (m.type === 'log.chunk' && m.jobId === d.jobId ? m.lines.map((l) => `${l.step}|${l.text}`) : [])).join('\n');
  t.equal(done.status, 'completed', `${done.reason ?? ''}\n${text}`);
  t.match(text, 'using key ***');
  t.notMatch(text, 'sk_real_runner_secret');
  t.match(text, 'shell said from-shell');
  t.same(done.steps.map((s) => [s.name, s.status]), [['hello', 'completed']]);
});
