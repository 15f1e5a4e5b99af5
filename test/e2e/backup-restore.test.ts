// Backup and restore end to end (docs/upgrades.md, "Backup and restore"), with REAL processes
// (test/fixtures/jobs-stack.ts: svc-relay, svc-orchestrator with an OIDC issuer and db custody,
// svc-agent, a git push through the relay). A pushed workflow prints lines, attests a file it
// built and uploads it as a run artifact (filesystem storage). Then the documented procedure:
// stop the programs, `pg_dump --format=custom` of the orchestrator and relay databases, a tar of
// the storage directory; restore into EMPTY databases (`pg_restore`) and an EMPTY data
// directory; start a relay and an orchestrator (same master key, same address and issuer) on
// what was restored. The restored system shows the same runs, jobs and logs (svc-admin, and svc
// through the restored relay with the same personal access token), serves the same artifact bytes
// from the restored storage, and verifies the same attestation (svc verify-attestation online
// against the restored issuer, and its /v1/verify-attestation route). Counts are printed.
//
// System PostgreSQL only: the embedded flavour is PostgreSQL 18, which the machine's pg_dump
// (Debian 12's, 15) refuses to dump; the procedure is the same there with a matching pg_dump.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { createDatabase } from '../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../fixtures/db.ts';
import { ORG, startJobsStack } from '../fixtures/jobs-stack.ts';
import { REPO_ROOT, startProgram, MIN_PROGRAM_TIMEOUT_MS } from '../fixtures/programs.ts';
import { until } from '../fixtures/runs.ts';
import { countLine, tableCounts } from '../fixtures/upgrade/restore.ts';
import { freePort } from './provenance/scenario.ts';

t.setTimeout(1_200_000);
const run = promisify(execFile);

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
export default workflow('release', {
  on: push({ branches: ['main'] }),
  jobs: {
    build: job({
      runsOn: 'e2e',
      steps: (s) => s
        .step('hello', async () => { for (let i = 1; i <= 5; i++) console.log('BACKUP line ' + i); })
        .step('build', async (ctx) => {
          await mkdir('dist', { recursive: true });
          await writeFile('dist/app.tgz', 'app ' + randomBytes(16).toString('hex') + '\\n');
          const result = await ctx.attestProvenance({ subjects: [{ path: 'dist/app.tgz' }] });
          console.log('ATTEST ' + JSON.stringify(result));
          await ctx.artifacts.upload('app', ['dist/app.tgz']);
        }),
    }),
  },
});
`;

const sha256 = async (file: string) => createHash('sha256').update(await readFile(file)).digest('hex');

await eachDatabase(t, async (t, db) => {
  if (db.kind === 'embedded') {
    t.comment('skipped on the embedded flavour: pg_dump 15 cannot dump PostgreSQL 18');
    return;
  }
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const stack = await startJobsStack(t, db, { orchestratorEnv: { SVC_SERVER_PORT: String(port), SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuer, SVC_ORCHESTRATOR_SIGNER_KIND: 'db' } });
  const pat = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', 'alice', '--json']);
  t.equal(pat.code, 0, pat.stderr);
  const patToken = (JSON.parse(pat.stdout) as { token: string }).token;
  const login = async (relayUrl: string) => {
    const out = await stack.svc(['login', '--token', patToken, '--platform-url', relayUrl]);
    t.equal(out.code, 0, `svc login ${relayUrl}: ${out.stderr}`);
  };
  await login(stack.relayUrl);
  await stack.startAgent({ SVC_AGENT_ID: 'e2e-backup-agent' });

  // Two pushes: two runs with logs, artifacts and attestations.
  const runs: string[] = [];
  for (const message of ['first', 'second']) {
    const sha = await stack.pushWorkflow({ '.svc/workflows/release.ts': WORKFLOW, 'NOTES.md': `${message}\n` }, message);
    const done = await stack.waitForRun(sha, 300_000);
    t.equal(done.status, 'completed', done.reason ?? '');
    runs.push(done.id);
  }

  /** What the system shows: runs, jobs, logs, the artifact's bytes, and the attestation verdicts. */
  const observe = async (label: string, pool: typeof stack.pool, url: string) => {
    const listed = await stack.admin(['runs', 'list', '--json'], { SVC_DATABASE_URL: url });
    t.equal(listed.code, 0, listed.stderr);
    const runList = (JSON.parse(listed.stdout) as { runs: Array<{ runId: string; status: string; workflow: string }> }).runs.map((r) => `${r.runId} ${r.workflow} ${r.status}`).sort();
    const logs: string[] = [];
    const verdicts: string[] = [];
    const digests: string[] = [];
    for (const id of runs) {
      const log = await stack.svc(['runs', 'logs', id]);
      t.equal(log.code, 0, `svc runs logs ${id} (${label}): ${log.stderr}`);
      logs.push(log.stdout);
      const out = join(stack.root, label, id);
      await mkdir(out, { recursive: true });
      for (const name of ['app', 'app.tgz.svc.json']) {
        const got = await stack.svc(['runs', 'download', id, name, '--output', out]);
        t.equal(got.code, 0, `svc runs download ${name} (${label}): ${got.stderr}`);
      }
      const artifact = join(out, 'dist', 'app.tgz');
      const bundleFile = join(out, 'dist', 'app.tgz.svc.json');
      digests.push(await sha256(artifact));
      const verdict = await stack.svc(['verify-attestation', artifact, '--bundle', bundleFile, '--issuer', issuer, '--json']);
      t.equal(verdict.code, 0, `svc verify-attestation online (${label})${verdict.code === 0 ? '' : `: ${verdict.stdout} ${verdict.stderr}`}`);
      const byRoute = await fetch(`${issuer}/v1/verify-attestation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ bundle: JSON.parse(await readFile(bundleFile, 'utf8')), artifactSha256: await sha256(artifact) }),
      });
      const answer = (await byRoute.json()) as { ok: boolean; claims?: { svc_run_id?: string } };
      t.match(answer, { ok: true, claims: { svc_run_id: id } }, `POST /v1/verify-attestation (${label})`);
      verdicts.push(`${id} ${String((JSON.parse(verdict.stdout) as { ok: boolean }).ok)} ${String(answer.ok)}`);
    }
    const counts = await tableCounts(pool);
    return { runList, logs, verdicts, digests, counts };
  };

  const before = await observe('before', stack.pool, db.url);
  t.same(before.runList, runs.map((id) => `${id} release completed`).sort(), 'svc-admin runs list shows both runs');
  t.ok(before.logs.every((l) => l.includes('BACKUP line 5')), 'the logs hold the printed lines');

  // Back up (docs/upgrades.md): programs stopped, both databases dumped, storage archived.
  const backup = join(stack.root, 'backup');
  await mkdir(backup, { recursive: true });
  t.equal(await stack.orchestrator.stop('SIGTERM'), 0, 'the orchestrator stopped cleanly');
  t.equal(await stack.relay.stop('SIGTERM'), 0, 'the relay stopped cleanly');
  await run('pg_dump', ['--format=custom', '--file', join(backup, 'orchestrator.dump'), db.url]);
  await run('pg_dump', ['--format=custom', '--file', join(backup, 'relay.dump'), String(stack.relayEnv['SVC_RELAY_DATABASE_URL'])]);
  await run('tar', ['-C', String(stack.orchEnv['SVC_DATA_DIR']), '-czf', join(backup, 'storage.tgz'), 'storage']);

  // Restore into empty databases and an empty data directory.
  const restoredOrch = await db.extraDatabase();
  const restoredRelay = await db.extraDatabase();
  await run('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--dbname', restoredOrch, join(backup, 'orchestrator.dump')]);
  await run('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', '--dbname', restoredRelay, join(backup, 'relay.dump')]);
  const restoredData = join(stack.root, 'restored-orch');
  await mkdir(restoredData, { recursive: true });
  await run('tar', ['-C', restoredData, '-xzf', join(backup, 'storage.tgz')]);

  const relay = await startProgram(join(REPO_ROOT, 'bin/svc-relay.ts'), 'svc-relay', {
    env: { ...stack.relayEnv, SVC_RELAY_DATABASE_URL: restoredRelay, SVC_DATA_DIR: join(stack.root, 'restored-relay') },
    readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS,
  });
  t.teardown(() => relay.stop('SIGKILL').catch(() => undefined));
  const orchestrator = await stack.startOrchestrator({ SVC_DATABASE_URL: restoredOrch, SVC_DATA_DIR: restoredData, SVC_PLATFORM_URL: relay.url });
  t.equal(orchestrator.url, issuer, 'the restored orchestrator answers at the same address');
  await login(relay.url);
  const pool = await createDatabase({ url: restoredOrch, logger: testLogger, maxPoolSize: 2 });
  t.teardown(() => pool.end());
  // svc reaches the restored orchestrator through the restored relay once it has connected.
  await until('the restored relay to reach the orchestrator', async () => ((await stack.svc(['runs', 'logs', runs[0]!])).code === 0 ? true : undefined), 60_000, 250);

  const after = await observe('after', pool, restoredOrch);
  t.same(after.runList, before.runList, `the same ${after.runList.length} runs`);
  t.same(after.logs, before.logs, 'the same logs');
  t.same(after.digests, before.digests, 'the same artifact bytes, from the restored storage');
  t.same(after.verdicts, before.verdicts, 'the same attestations verify');
  const lost = Object.entries(before.counts).filter(([table, n]) => (after.counts[table] ?? 0) < n);
  t.same(lost, [], 'no table has fewer rows after the restore');
  t.comment(`restored: ${after.runList.length} runs, ${after.logs.join('').split('\n').length} log lines, ${after.digests.length} artifacts, ${after.verdicts.length} attestations verified; rows: ${countLine(after.counts)}`);
});
