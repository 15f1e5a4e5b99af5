// Build jobs that fail, against the REAL orchestrator (startOrchestrator + dispatch, real
// PostgreSQL) and a real agent and git repository: a tree whose content hash is not the run's
// (drift), a commit that does not exist, and an orchestrator that does not serve cache uploads.
// Each fails the build with a reason that says why, reports its steps, and uploads nothing.
import { join } from 'node:path';
import t from 'tap';
import { sql, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { insertRun, jobRow, until } from '../../fixtures/runs.ts';
import { startNode } from '../../kernel/orchestrator/dispatch/harness.ts';
import { launchAgent } from '../fixtures/agent-harness.ts';
import { gitRepo, makeTree, tempDir } from '../fixtures/trees.ts';


async function buildRun(pool: DatabasePool, options: { contentHash: string; sha: string; cloneUrl: string }): Promise<{ runId: string; buildId: string; testId: string }> {
  // Complete at insert: the agent may claim the build job the moment the row commits.
  const { runId, jobs } = await insertRun(pool, {
    contentHash: options.contentHash,
    sha: options.sha,
    cloneUrl: options.cloneUrl,
    jobs: [
      { name: 'svc:build', kind: 'build', runsOn: ['gpu'] },
      { name: 'test', runsOn: ['gpu'], needs: ['svc:build'] },
    ],
  });
  return { runId, buildId: jobs['svc:build']!.id, testId: jobs['test']!.id };
}

async function finished(pool: DatabasePool, jobId: string) {
  return until('build to finish', async () => {
    const row = await jobRow(pool, jobId);
    return ['completed', 'failed', 'cancelled'].includes(row.status) ? row : undefined;
  }, 60_000, 50);
}

async function stepsOf(pool: DatabasePool, jobId: string): Promise<string[][]> {
  const rows = (await pool.any(sql.unsafe`SELECT name, status FROM job_steps WHERE job_id = ${jobId} ORDER BY index`)) as unknown as Array<{ name: string; status: string }>;
  return rows.map((r) => [r.name, r.status]);
}

t.test('failing builds say why and leave the run failed', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // No caches subsystem: this orchestrator refuses cache uploads (SVC_ERR_DISPATCH_UNSUPPORTED).
    const node = await startNode(t, db.url);
    const tmp = await tempDir('svc-build-job-');
    t.teardown(tmp.cleanup);
    const tree = await makeTree(join(tmp.dir, 'repo'));
    const sha = await gitRepo(tree.dir);
    const cloneUrl = `file://${tree.dir}`;
    const agent = await launchAgent({ url: node.url, workDir: join(tmp.dir, 'w') });
    t.teardown(() => agent.stop());

    // Drift: the committed tree does not hash to the run's contentHash.
    const drift = await buildRun(db.pool, { contentHash: 'c'.repeat(64), sha, cloneUrl });
    const driftRow = await finished(db.pool, drift.buildId);
    t.equal(driftRow.status, 'failed');
    t.match(driftRow.reason, /^build failed: Lock file is out of date: workflow "ci" hashes to [0-9a-f]{64} but the lock file says c{64}/);
    t.same(await stepsOf(db.pool, drift.buildId), [['bundle source', 'failed']]);
    await until('dependent skipped', async () => ((await jobRow(db.pool, drift.testId)).status === 'skipped' ? true : undefined));
    t.match(await jobRow(db.pool, drift.testId), { status: 'skipped', reason: 'needs svc:build which failed' });

    // A commit the repository does not have: the checkout fails before any step.
    const missing = await buildRun(db.pool, { contentHash: tree.contentHash, sha: 'd'.repeat(40), cloneUrl });
    const missingRow = await finished(db.pool, missing.buildId);
    t.equal(missingRow.status, 'failed');
    t.match(missingRow.reason, /^build failed: git fetch failed/);
    t.same(await stepsOf(db.pool, missing.buildId), []);

    // The tree is right but the orchestrator serves no cache uploads: the upload step fails.
    const refused = await buildRun(db.pool, { contentHash: tree.contentHash, sha, cloneUrl });
    const refusedRow = await finished(db.pool, refused.buildId);
    t.equal(refusedRow.status, 'failed');
    t.match(refusedRow.reason, /^build failed: source tarball: the orchestrator refused the upload \(SVC_ERR_DISPATCH_UNSUPPORTED: /);
    t.same(await stepsOf(db.pool, refused.buildId), [['bundle source', 'completed'], ['install dependencies', 'skipped'], ['upload', 'failed']]);
    const skipReason = (await db.pool.oneFirst(sql.unsafe`SELECT reason FROM job_steps WHERE job_id = ${refused.buildId} AND name = 'install dependencies'`)) as string;
    t.match(skipReason, /no lockfileHash/);
  });
});
