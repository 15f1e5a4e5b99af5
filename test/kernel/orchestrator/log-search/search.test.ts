// Log search on the database (docs/log-search.md), on both PostgreSQL flavours (pg_trgm must be
// there, in the template databases too): lines found as substrings ignoring case and colour
// escapes, with context
// across chunk boundaries and their step; every filter; another org's lines never; newest run
// first with `more`; the newest-first walk for a text in more chunks than the index path reads;
// a deleted run leaves nothing findable; a secret masked by the agent's real log pipeline and
// stored through the real chunk path is not findable; bad input is refused before any read.
import t from 'tap';
import { LogPipeline, type LogChunkOut } from '../../../../agent/logs/pipeline.ts';
import { SecretSet } from '../../../../agent/logs/masker.ts';
import { appendLogChunk } from '../../../../kernel/orchestrator/dispatch/status.ts';
import { INDEX_CANDIDATES_MAX, searchLogs } from '../../../../kernel/orchestrator/log-search/search.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { LogSearchQuery } from '../../../../schemas/wire/relay-log-search.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun } from '../../../fixtures/runs.ts';

const ORG = 'acme';
const AT = '2026-12-01T10:00:00.000Z';
const line = (text: string, step = 'build') => ({ at: AT, step, stream: 'stdout' as const, text });

await eachDatabase(t, async (t, db) => {
  const pool = db.pool;
  const q = (text: string, extra: Partial<LogSearchQuery> = {}): LogSearchQuery => ({ text, limit: 50, context: 2, ...extra });
  const chunk = (jobId: string, seq: number, lines: ReturnType<typeof line>[]) =>
    pool.query(sql.unsafe`INSERT INTO job_logs (job_id, seq, lines) VALUES (${jobId}, ${seq}, ${sql.jsonb(lines as never)})`);
  /** A run of `org` with one job `name` whose steps are build and test, created `minutesAgo`. */
  const run = async (o: { org?: string; repository?: string; workflow?: string; job?: string; status?: string; minutesAgo: number }) => {
    const r = await insertRun(pool, { orgId: o.org ?? ORG, repository: o.repository ?? 'acme/app', workflow: o.workflow ?? 'ci', status: o.status ?? 'completed', jobs: [{ name: o.job ?? 'unit', status: 'completed' }] });
    const jobId = r.all[0]!.id;
    await pool.query(sql.unsafe`UPDATE runs SET created_at = now() - ${`${o.minutesAgo} minutes`}::interval WHERE id = ${r.runId}`);
    await pool.query(sql.unsafe`INSERT INTO job_steps (job_id, index, name, status) VALUES (${jobId}, 0, 'build', 'completed'), (${jobId}, 1, 'test', 'completed')`);
    return { runId: r.runId, jobId };
  };

  const installed = (await pool.any(sql.unsafe`SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'`)) as Array<{ extname: string }>;
  t.equal(installed.length, 1, 'pg_trgm is installed by the migrations');

  const newest = await run({ minutesAgo: 1 });
  await chunk(newest.jobId, 0, [line('npm ci'), line('added 312 packages'), line('compile src/a.ts')]);
  await chunk(newest.jobId, 1, [line('Error: connect ECONNREFUSED 10.0.0.7:5432', 'test'), line('at TCPConnectWrap', 'test'), line('tests: 3 failed', 'test')]);
  const older = await run({ minutesAgo: 60, repository: 'acme/other', workflow: 'nightly', job: 'e2e', status: 'failed' });
  await chunk(older.jobId, 0, [line('progress 100%_done'), line('progress 100% done'), line('econnrefused again in lowercase', 'test')]);
  const foreign = await run({ org: 'globex', minutesAgo: 2 });
  await chunk(foreign.jobId, 0, [line('ECONNREFUSED in another org')]);

  await t.test('a substring, ignoring case, newest run first, with context across chunks and the step', async (t) => {
    const answer = await searchLogs(pool, ORG, q('econnrefused'));
    t.equal(answer.hits.length, 2);
    t.equal(answer.more, false);
    t.match(answer.hits[0], {
      runId: newest.runId, repository: 'acme/app', ref: 'refs/heads/main', workflow: 'ci', job: 'unit', step: 'test', stepIndex: 1, seq: 1, index: 0,
      text: 'Error: connect ECONNREFUSED 10.0.0.7:5432', before: ['added 312 packages', 'compile src/a.ts'], after: ['at TCPConnectWrap', 'tests: 3 failed'],
    });
    t.match(answer.hits[1], { runId: older.runId, text: 'econnrefused again in lowercase', before: ['progress 100%_done', 'progress 100% done'], after: [] });
    t.notOk(answer.hits.some((h) => h.runId === foreign.runId), "another org's line is never shown");
    const mid = await searchLogs(pool, ORG, q('NREFUSED 10.0', { context: 0 }));
    t.same(mid.hits.map((h) => [h.text, h.before, h.after]), [['Error: connect ECONNREFUSED 10.0.0.7:5432', [], []]], 'mid-word substring, no context asked');
    const literal = await searchLogs(pool, ORG, q('100%_done'));
    t.same(literal.hits.map((h) => h.text), ['progress 100%_done'], '% and _ are literal characters, not wildcards');
  });

  await t.test('colour escapes are not part of the searched text', async (t) => {
    const coloured = await run({ minutesAgo: 4, repository: 'acme/colour' });
    await chunk(coloured.jobId, 0, [line('\u001b[32mline\u001b[0m 9999 \u001b[1;31mred bold\u001b[0m')]);
    const answer = await searchLogs(pool, ORG, q('line 9999 red', { repository: 'acme/colour' }));
    t.same(answer.hits.map((h) => h.text), ['\u001b[32mline\u001b[0m 9999 \u001b[1;31mred bold\u001b[0m'], 'found as shown; the stored text is returned');
    t.equal((await searchLogs(pool, ORG, q('[32mline', { repository: 'acme/colour' }))).hits.length, 0, 'the escape itself is not searched');
  });

  await t.test('filters: repository, branch, workflow, job, status, time range', async (t) => {
    const texts = async (extra: Partial<LogSearchQuery>) => (await searchLogs(pool, ORG, q('econnrefused', extra))).hits.map((h) => h.runId);
    t.same(await texts({ repository: 'acme/other' }), [older.runId]);
    t.same(await texts({ workflow: 'ci' }), [newest.runId]);
    t.same(await texts({ job: 'e2e' }), [older.runId]);
    t.same(await texts({ status: 'failed' }), [older.runId]);
    t.same(await texts({ branch: 'main' }), [newest.runId, older.runId]);
    t.same(await texts({ branch: 'refs/heads/main' }), [newest.runId, older.runId]);
    t.same(await texts({ branch: 'dev' }), []);
    t.same(await texts({ since: new Date(Date.now() - 30 * 60_000).toISOString() }), [newest.runId]);
    t.same(await texts({ until: new Date(Date.now() - 30 * 60_000).toISOString() }), [older.runId]);
  });

  await t.test('limit: the newest lines, and more says there are others', async (t) => {
    const answer = await searchLogs(pool, ORG, q('econnrefused', { limit: 1 }));
    t.same(answer.hits.map((h) => h.runId), [newest.runId]);
    t.equal(answer.more, true);
  });

  await t.test('a text in more chunks than the index path reads: the newest runs are walked', async (t) => {
    const busy = await run({ minutesAgo: 0, repository: 'acme/busy' });
    await pool.query(sql.unsafe`
      INSERT INTO job_logs (job_id, seq, lines)
      SELECT ${busy.jobId}::uuid, 10 + s, jsonb_build_array(jsonb_build_object('at', ${AT}::text, 'step', 'build', 'stream', 'stdout', 'text', 'warning: deprecated api ' || s))
      FROM generate_series(0, ${INDEX_CANDIDATES_MAX + 50}) AS s`);
    const answer = await searchLogs(pool, ORG, q('deprecated api', { limit: 5, context: 1 }));
    t.same(answer.hits.map((h) => h.text), [0, 1, 2, 3, 4].map((i) => `warning: deprecated api ${i}`), 'the first lines of the newest run, in log order');
    t.equal(answer.more, true);
    t.same(answer.hits[1]!.before, ['warning: deprecated api 0'], 'context from the neighbouring chunk');
  });

  await t.test('a deleted run leaves nothing findable', async (t) => {
    const gone = await run({ minutesAgo: 5 });
    await chunk(gone.jobId, 0, [line('zq-vanishing-marker 42')]);
    t.equal((await searchLogs(pool, ORG, q('zq-vanishing-marker'))).hits.length, 1);
    await pool.query(sql.unsafe`DELETE FROM runs WHERE id = ${gone.runId}`);
    t.equal((await searchLogs(pool, ORG, q('zq-vanishing-marker'))).hits.length, 0);
  });

  await t.test('a secret masked by the agent is not findable; the line around it is, masked', async (t) => {
    const job = await run({ minutesAgo: 3 });
    await pool.query(sql.unsafe`UPDATE jobs SET agent_id = 'agent-1' WHERE id = ${job.jobId}`);
    const secrets = new SecretSet();
    secrets.add('hunter2-s3cr3t-token');
    const sent: LogChunkOut[] = [];
    const pipeline = new LogPipeline({ secrets, send: (c) => sent.push(c) });
    pipeline.line('deploy', 'stdout', 'using token hunter2-s3cr3t-token for the registry');
    pipeline.raw('deploy', 'stdout', 'split hunter2-s3');
    pipeline.raw('deploy', 'stdout', 'cr3t-token across writes\n');
    pipeline.close();
    for (const c of sent) await appendLogChunk(pool, 'agent-1', { type: 'log.chunk', jobId: job.jobId, seq: c.seq, lines: c.lines });
    for (const text of ['hunter2-s3cr3t-token', 's3cr3t', 'hunter2']) t.equal((await searchLogs(pool, ORG, q(text))).hits.length, 0, `"${text}" is not found`);
    const around = await searchLogs(pool, ORG, q('for the registry'));
    t.same(around.hits.map((h) => h.text), ['using token *** for the registry']);
    t.same((await searchLogs(pool, ORG, q('across writes'))).hits.map((h) => h.text), ['split *** across writes']);
  });

  await t.test('bad input is refused with the reason', async (t) => {
    const refused = async (query: LogSearchQuery, pattern: RegExp) => {
      await t.rejects(searchLogs(pool, ORG, query), { code: 'SVC_ERR_LOG_SEARCH_INVALID', message: pattern });
    };
    await refused(q('   '), /empty/);
    await refused(q('ab'), /at least 3 letters or digits in a row/);
    await refused(q('-- ++ ::'), /at least 3 letters or digits/);
    await refused(q('x'.repeat(201)), /at most 200/);
    await refused(q('two\nlines'), /line break/);
    await refused(q('econnrefused', { since: '2026-12-02T00:00:00.000Z', until: '2026-12-01T00:00:00.000Z' }), /since .* is after until/);
  });
});
