// The agent forwards the concurrency group keys the `svc:filter` pseudo-job evaluated in the
// REAL step runner (process sandbox) to the orchestrator in its terminal `job.status`, next to
// `skipped`; a filter that says no reports skipped and no keys; a bad key fails the job. Every
// agent frame is validated against schemas/wire/agent.ts by the orchestrator double.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../../agent/agent.ts';
import { parseAgentEnv } from '../../../agent/env.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { dispatchOf } from '../fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from '../fixtures/trees.ts';
import { startOrchestratorDouble } from '../fixtures/ws-orchestrator.ts';


const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  filter: (ctx) => !ctx.changedFiles.includes('SKIP'),
  concurrency: { group: (ctx) => 'ci-' + ctx.event.branch, cancelInProgress: true },
  jobs: {
    build: job({ runsOn: 'linux', concurrency: { group: 'builders' }, steps: (s) => s.step('b', async () => ({})) }),
    deploy: job({
      runsOn: 'linux',
      concurrency: { group: (ctx) => { if (ctx.changedFiles.includes('BREAK')) throw new Error('no deploy key'); return 'deploy'; } },
      steps: (s) => s.step('d', async () => ({})),
    }),
  },
});
`;

t.test('svc:filter through the agent: keys in job.status, skipped without keys, a bad key fails', async (t) => {
  const tmp = await tempDir('svc-agent-groups-');
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
    agentId: 'groups',
    logger: pino({ level: 'silent' }),
    sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'auto', network: true })]]),
    runnerPath: DEFAULT_RUNNER_PATH,
  });
  t.teardown(() => agent.stop());

  const filterJob = async (changedFiles: string[]) => {
    const d = dispatchOf({
      sourceTarUrl: files.url('s'),
      sourceTarDigest: digest,
      jobConfig: { job: 'svc:filter', role: 'filter', contentHash: tree.contentHash, env: {}, changedFiles, event: { type: 'push', branch: 'main' } },
    });
    orch.dispatch(d);
    return orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
  };

  const run = await filterJob(['src/a.ts']);
  t.equal(run.status, 'completed', run.reason ?? '');
  t.equal(run.skipped, undefined);
  t.same(run.concurrencyGroups, { workflow: 'ci-main', jobs: { build: 'builders', deploy: 'deploy' } });

  const skipped = await filterJob(['SKIP']);
  t.equal(skipped.status, 'completed');
  t.equal(skipped.skipped, true);
  t.equal(skipped.reason, 'skipped: workflow filter returned false');
  t.notOk('concurrencyGroups' in skipped, 'no keys when the workflow does not run');

  const broken = await filterJob(['BREAK']);
  t.equal(broken.status, 'failed');
  t.equal(broken.reason, 'concurrency group of job deploy: threw: no deploy key');
  t.notOk('concurrencyGroups' in broken);

  t.same(orch.invalid, [], 'every agent frame matched schemas/wire/agent.ts');
});
