// The agent against the REAL orchestrator (startOrchestrator + the dispatch subsystem, real
// PostgreSQL): token auth, registration labels, a queued job dispatched, run and reported.
import { join } from 'node:path';
import t from 'tap';
import { createAgentToken } from '../../kernel/orchestrator/dispatch/tokens.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { insertRun, jobRow, until } from '../fixtures/runs.ts';
import { startNode } from '../kernel/orchestrator/dispatch/harness.ts';
import { launchAgent } from './fixtures/agent-harness.ts';
import { gitRepo, makeTree, tempDir } from './fixtures/trees.ts';

t.test('register, dispatch, run, report against the real orchestrator', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_AGENT_AUTH: 'token' });
    const token = await createAgentToken(db.pool, { description: 'agent test' });
    const tmp = await tempDir('svc-agent-real-');
    t.teardown(tmp.cleanup);

    const error = await launchAgent({ url: node.url, token: 'svcat_not_a_real_token', workDir: join(tmp.dir, 'bad') }).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    t.equal(error?.code, 'SVC_ERR_AGENT_UNAUTHORIZED', 'a bad token is refused and not retried');

    const tree = await makeTree(join(tmp.dir, 'repo'));
    const sha = await gitRepo(tree.dir);
    const { runId, jobs } = await insertRun(db.pool, { contentHash: tree.contentHash, jobs: [{ name: 'build', runsOn: ['gpu'] }] });
    // Point the run at the local repository (ingest would have recorded the provider's clone URL).
    await db.pool.query(sql.unsafe`
      UPDATE runs SET sha = ${sha},
        event = jsonb_set(event, '{repository,cloneUrl}', to_jsonb(${`file://${tree.dir}`}::text))
      WHERE id = ${runId}`);

    const agent = await launchAgent({ url: node.url, token: token.token, workDir: join(tmp.dir, 'w'), labels: 'gpu' });
    t.teardown(() => agent.stop());
    const session = await until('registration', () => node.service.registry.get('agent-test-1'));
    t.ok(session.labels.includes('gpu'));
    t.ok(session.labels.includes('svc:sandbox:bare-metal'), `auto labels from the register message: ${session.labels.join(', ')}`);

    const row = await until('job finished', async () => {
      const r = await jobRow(db.pool, jobs['build']!.id);
      return ['completed', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    }, 30_000);
    t.equal(row.status, 'completed', row.reason ?? '');
    t.equal(row.agent_id, 'agent-test-1');
    t.match(row.outputs, { answer: 42 });
    t.match(row.context, { sandbox: 'bare-metal', nodeVersion: process.version });
  });
});
