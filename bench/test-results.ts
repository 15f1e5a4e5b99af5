// Test results (docs/test-results.md): (1) record 20,000 results of one job: a real orchestrator
// (dispatch + test-results subsystems, real PostgreSQL) and a test agent on a real socket; the
// agent's own reader (collectTests) parses a 20,000-case JUnit file and sends it in batches of
// 5,000; measured from the first batch sent to the last answer (stored and committed), beside the
// parse time; (2) load one test's history over 1,000 runs (testHistory, the query behind
// `svc tests history` and the history page) from a table holding 50 tests × 1,000 runs.
// Targets: record < 2 s, history < 100 ms. Figures only, nothing is asserted.
// Run: node bench/test-results.ts [rounds, default 5]
// Database: SVC_TEST_DATABASE_URL (default local PostgreSQL), else embedded.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretSet } from '../agent/logs/masker.ts';
import { collectTests } from '../agent/test-results/collect.ts';
import { adminAuthSubsystem } from '../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator } from '../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../kernel/orchestrator/dispatch/index.ts';
import { testHistory } from '../kernel/orchestrator/test-results/queries.ts';
import { testResultsSubsystem } from '../kernel/orchestrator/test-results/subsystem.ts';
import { createDatabase, sql } from '../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../plugins/builtin.ts';
import { embeddedServer, freshDatabase, systemAvailability, systemTestUrl, testLogger } from '../test/fixtures/db.ts';
import { insertRun } from '../test/fixtures/runs.ts';
import { TestAgent } from '../test/fixtures/test-agent.ts';
import { machineLine } from './lib/machine.ts';

const rounds = Math.max(1, Math.min(20, Number(process.argv[2] ?? 5)));
const CASES = 20_000;
const RUNS = 1_000;
const TESTS_PER_RUN = 50;

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] as number;
const slowest = (xs: number[]) => sorted(xs).at(-1) as number;

function junit(cases: number): string {
  const rows: string[] = [];
  for (let i = 0; i < cases; i++) {
    rows.push(i % 500 === 0 ? `<testcase classname="bench" name="case ${i}" time="0.004"><failure message="expected ${i}">at bench.test.ts:${i}</failure></testcase>` : `<testcase classname="bench" name="case ${i}" time="0.002"/>`);
  }
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="bench">${rows.join('\n')}</testsuite></testsuites>\n`;
}

const end = machineLine(false);
const system = await systemAvailability();
const serverUrl = system.ok ? systemTestUrl() : (await embeddedServer()).url;
const database = await freshDatabase(serverUrl);
const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-tests-'));
const pool = await createDatabase({ url: database.url, logger: testLogger, maxPoolSize: 4 });
const orch = await startOrchestrator({
  env: { SVC_DATABASE_URL: database.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'b'.repeat(64), SVC_AGENT_AUTH: 'none' },
  cwd: dataDir,
  logger: testLogger,
  plugins: orchestratorPlugins,
  subsystems: [adminAuthSubsystem, createDispatchSubsystem({ tickMs: 150 }), testResultsSubsystem],
});
const agent = await TestAgent.online({ url: orch.url, agentId: 'bench-tests', labels: ['bench'] });
try {
  await writeFile(join(dataDir, 'junit.xml'), junit(CASES));
  const record: number[] = [];
  const parse: number[] = [];
  console.log(`record: ${CASES} results of one job (JUnit XML, ${rounds} rounds after a warm-up)`);
  for (let round = -1; round < rounds; round++) {
    // The job as dispatch leaves it: running on this agent (the orchestrator checks both).
    const run = await insertRun(pool, { orgId: 'bench', status: 'running', jobs: [{ name: 'job', runsOn: ['nobody'], status: 'running' }] });
    const jobId = run.jobs['job']!.id;
    await pool.query(sql.unsafe`UPDATE jobs SET agent_id = 'bench-tests', attempts = 1 WHERE id = ${jobId}`);
    let firstSent = 0;
    let lastAnswer = 0;
    const started = performance.now();
    const result = await collectTests(
      { index: 0, name: 'test', patterns: ['junit.xml'], paths: [], exitFailure: true },
      {
        jobId,
        workspace: dataDir,
        scratch: dataDir,
        secrets: new SecretSet(),
        signal: new AbortController().signal,
        send: () => {},
        request: async (message) => {
          if (firstSent === 0) firstSent = performance.now();
          agent.sendRaw(message);
          const answer = await agent.waitFor('tests.report.response', (m) => m.requestId === message.requestId);
          lastAnswer = performance.now();
          return answer;
        },
      },
    );
    if (result.total !== CASES || result.failed !== CASES / 500) throw new Error(`recorded ${result.total} / failed ${result.failed}`);
    if (round >= 0) {
      record.push(lastAnswer - firstSent);
      parse.push(firstSent - started);
    }
  }
  console.log(`  send → stored (4 batches, committed)   median ${median(record).toFixed(0).padStart(6)} ms   slowest ${slowest(record).toFixed(0).padStart(6)} ms   target < 2000 ms (median / target ${(median(record) / 2000).toFixed(2)})`);
  console.log(`  agent parse of the file (for scale)    median ${median(parse).toFixed(0).padStart(6)} ms   slowest ${slowest(parse).toFixed(0).padStart(6)} ms`);
  console.log(`  rate                                   ${((CASES / median(record)) * 1000).toFixed(0)} results/s stored`);

  // History: 1,000 runs of one repository, 50 tests each, one result per test per run.
  const seeded = performance.now();
  await pool.query(sql.unsafe`
    WITH r AS (
      INSERT INTO runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, sha, event_name, subject_kind, status, content_hash, lock_entry, event, created_at)
      SELECT gen_random_uuid(), 'hist', 'github', 'acme/history', 'acme/history', 'ci', md5(g::text) || 'aaaaaaaa', md5(g::text) || 'aaaaaaaa', 'push', 'ref', 'queued',
             ${'a'.repeat(64)}, '{}'::jsonb, '{}'::jsonb, now() - make_interval(mins => ${RUNS} - g)
      FROM generate_series(1, ${RUNS}) g RETURNING id, sha, created_at
    ), j AS (
      INSERT INTO jobs (id, run_id, org_id, name, display_name, status, queued_at)
      SELECT gen_random_uuid(), r.id, 'hist', 'unit', 'unit', 'queued', now() FROM r RETURNING id, run_id
    )
    INSERT INTO test_results (org_id, repository, sha, run_id, job_id, attempt, step_index, step_name, suite, name, status, duration_ms, created_at)
    SELECT 'hist', 'acme/history', r.sha, r.id, j.id, 1, 0, 'test', 'suite', 'test ' || t,
           CASE WHEN (hashtext(r.id::text || t) % 17) = 0 THEN 'failed' ELSE 'passed' END, 10 + abs(hashtext(r.id::text || t) % 90), r.created_at
    FROM r JOIN j ON j.run_id = r.id CROSS JOIN generate_series(1, ${TESTS_PER_RUN}) t`);
  await pool.query(sql.unsafe`ANALYZE test_results`);
  console.log(`history: one test over ${RUNS} runs (${RUNS * TESTS_PER_RUN} rows of this repository; seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s), ${rounds * 4} loads`);
  const loads: number[] = [];
  for (let i = -2; i < rounds * 4; i++) {
    const started = performance.now();
    const h = await testHistory(pool, 'hist', { repository: 'acme/history', suite: 'suite', name: `test ${1 + (i & 31)}`, limit: RUNS });
    if (h.results.length !== RUNS) throw new Error(`history has ${h.results.length} results`);
    if (i >= 0) loads.push(performance.now() - started);
  }
  console.log(`  load (results, failure rate, median, flaky, quarantine)   median ${median(loads).toFixed(1).padStart(6)} ms   slowest ${slowest(loads).toFixed(1).padStart(6)} ms   target < 100 ms (median / target ${(median(loads) / 100).toFixed(2)})`);
} finally {
  await agent.close();
  await orch.stop();
  await pool.end();
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
  end();
}
