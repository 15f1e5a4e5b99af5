// The state machine of runs and jobs: the database enforces exactly the TypeScript table, and an
// illegal move fails its statement, whatever code attempts it.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { canTransition, JOB_STATUSES, JOB_TRANSITIONS, RUN_STATUSES, RUN_TRANSITIONS, transitionRows } from '../../../../kernel/orchestrator/run-control/states.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, moveStatus, statusPath } from '../../../fixtures/runs.ts';
import { migrated } from './harness.ts';

t.test('the table is closed and terminal statuses are final', async (t) => {
  for (const [statuses, table] of [[RUN_STATUSES, RUN_TRANSITIONS], [JOB_STATUSES, JOB_TRANSITIONS]] as const) {
    const known = new Set<string>(statuses);
    for (const [from, targets] of Object.entries(table)) {
      t.ok(from === 'new' || known.has(from), `${from} is a status`);
      for (const to of targets) t.ok(known.has(to), `${from} → ${to} targets a status`);
    }
    for (const s of statuses) t.ok(s in table, `${s} has a row`);
  }
  for (const s of ['completed', 'failed', 'cancelled', 'skipped']) {
    t.same(RUN_TRANSITIONS[s as 'completed'], [], `run ${s} is final`);
    t.same(JOB_TRANSITIONS[s as 'completed'], [], `job ${s} is final`);
  }
  t.ok(canTransition('runs', 'held', 'queued'));
  t.notOk(canTransition('runs', 'completed', 'running'));
  t.notOk(canTransition('jobs', 'queued', 'running'), 'a job is dispatched before it runs');
  t.same(statusPath('jobs', 'queued', 'running'), ['dispatched', 'running']);
  t.equal(statusPath('runs', 'completed', 'queued'), null);
});

t.test('the database enforces the same table', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);
    const rows = (await db.pool.any(sql.unsafe`SELECT entity, from_status AS "from", to_status AS "to" FROM status_transitions ORDER BY 1, 2, 3`)) as unknown as Array<{ entity: string; from: string; to: string }>;
    const expected = transitionRows().sort((a, b) => `${a.entity} ${a.from} ${a.to}`.localeCompare(`${b.entity} ${b.from} ${b.to}`));
    t.same(
      rows.map((r) => `${r.entity} ${r.from} ${r.to}`).sort(),
      expected.map((r) => `${r.entity} ${r.from} ${r.to}`).sort(),
      'migration 0610 seeds exactly run-control/states.ts',
    );

    const run = await insertRun(db.pool, { jobs: [{ name: 'build' }] });
    const jobId = run.jobs['build']!.id;
    await t.rejects(
      db.pool.query(sql.unsafe`UPDATE jobs SET status = 'running' WHERE id = ${jobId}`),
      /illegal job status transition queued -> running/,
      'queued → running is refused',
    );
    t.equal(String(await db.pool.oneFirst(sql.unsafe`SELECT status FROM jobs WHERE id = ${jobId}`)), 'queued', 'and changes nothing');
    await moveStatus(db.pool, 'jobs', jobId, 'completed');
    await t.rejects(db.pool.query(sql.unsafe`UPDATE jobs SET status = 'queued' WHERE id = ${jobId}`), /illegal job status transition completed -> queued/);
    await moveStatus(db.pool, 'runs', run.runId, 'completed');
    await t.rejects(db.pool.query(sql.unsafe`UPDATE runs SET status = 'running' WHERE id = ${run.runId}`), /illegal run status transition completed -> running/);
    await t.rejects(
      db.pool.query(sql.unsafe`
        INSERT INTO runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, sha, event_name, subject_kind, status, content_hash, lock_entry, event)
        VALUES (${randomUUID()}, 'o', 'github', 'a/b', 'a/b', 'w', 's', 's', 'push', 'ref', 'completed', 'h', '{}', '{}')`),
      /illegal run status transition new -> completed/,
      'a run is never created finished',
    );
    // Same status again is not a transition (updates of other columns pass).
    await db.pool.query(sql.unsafe`UPDATE runs SET status = 'completed', reason = 'x' WHERE id = ${run.runId}`);
  });
});

t.test('docs/run-states.md lists exactly the table', async (t) => {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(new URL('../../../../docs/run-states.md', import.meta.url), 'utf8');
  for (const [heading, table] of [['## Runs', RUN_TRANSITIONS], ['## Jobs', JOB_TRANSITIONS]] as const) {
    const section = text.slice(text.indexOf(heading));
    for (const [from, targets] of Object.entries(table)) {
      const row = new RegExp(`^\\| \`${from}\` \\| (.*) \\|$`, 'm').exec(section);
      const listed = row === null ? null : row[1] === '(final)' ? [] : row[1]!.split(', ').map((s) => s.replace(/`/g, ''));
      t.same(listed, [...targets], `${heading.slice(3)} ${from}`);
    }
  }
});
