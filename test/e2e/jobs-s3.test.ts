// The whole job flow with SVC_STORAGE_TYPE=s3, REAL processes (test/fixtures/jobs-stack.ts:
// svc-relay, svc-orchestrator, svc-agent in the process sandbox, real PostgreSQL, a bare repo
// with the post-receive hook) against s3rver over HTTP (test/fixtures/s3-server.ts, which checks
// pre-signed signatures). A push with a vendored npm dependency:
//   1. first push: the build job uploads the source and dependency tarballs through pre-signed
//      PUTs; the job runs from them, imports the dependency, saves a user cache (ctx.cache,
//      two-phase: temp object then copy); the webhook payload is in the bucket's event log and
//      read back through the relay; nothing lands on the orchestrator's disk;
//   2. second push: source cache hit (no build job), the user cache restored from the bucket.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import t from 'tap';
import * as tar from 'tar';
import { Value } from 'typebox/value';
import { S3StorageConfig } from '../../plugins/storage/s3/index.ts';
import { S3Storage } from '../../plugins/storage/s3/storage.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { ORG, startJobsStack } from '../fixtures/jobs-stack.ts';
import { startS3Server } from '../fixtures/s3-server.ts';

// Two databases, each a whole stack of real processes: generous for a machine with both cores busy.
t.setTimeout(1_800_000);

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
import { mkdir, readFile, writeFile } from 'node:fs/promises';

export default workflow('ci', {
  on: push({ branches: ['main'] }),
  jobs: {
    use: job({
      runsOn: 'e2e',
      steps: (s) =>
        s
          .step('dep', async () => {
            const { default: greet } = await import('greet');
            console.log('DEP ' + greet('s3'));
          })
          .step('cache', async (ctx) => {
            const restored = await ctx.cache.restore('s3-user-cache-v1', { paths: ['ucache'] });
            if (restored.hit) {
              console.log('CACHE restore hit ' + restored.matchedKey + ' ' + (await readFile('ucache/data.txt', 'utf8')).trim());
              return;
            }
            console.log('CACHE restore miss');
            await mkdir('ucache', { recursive: true });
            await writeFile('ucache/data.txt', 'cached-in-s3\\n');
            const saved = await ctx.cache.save('s3-user-cache-v1', ['ucache']);
            console.log('CACHE saved ' + saved.saved);
          }),
    }),
  },
});
`;

/** `.svc/` files with a dependency packed from a local folder (npm ci needs no network). */
async function dependencyFiles(scratch: string): Promise<{ text: Record<string, string>; tgz: Buffer }> {
  const pkg = join(scratch, 'greet');
  await mkdir(join(pkg, 'package'), { recursive: true });
  await writeFile(join(pkg, 'package', 'package.json'), JSON.stringify({ name: 'greet', version: '1.0.0', main: 'index.js' }));
  await writeFile(join(pkg, 'package', 'index.js'), "module.exports = (n) => 'hello ' + n;\n");
  const tgzPath = join(pkg, 'greet-1.0.0.tgz');
  await tar.c({ gzip: true, file: tgzPath, cwd: pkg, portable: true, mtime: new Date('2000-01-01T00:00:00Z') }, ['package']);
  const svc = join(scratch, 'svc');
  await mkdir(join(svc, 'vendor'), { recursive: true });
  const tgz = await readFile(tgzPath);
  await writeFile(join(svc, 'vendor', 'greet-1.0.0.tgz'), tgz);
  await writeFile(join(svc, 'package.json'), JSON.stringify({ name: 'wf', private: true, dependencies: { greet: 'file:vendor/greet-1.0.0.tgz' } }));
  await execa('npm', ['install', '--package-lock-only', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], { cwd: svc });
  return {
    text: {
      '.svc/.svcignore': 'node_modules/\ntypes/\n.npmrc\npackage-lock.json\n',
      '.svc/package.json': await readFile(join(svc, 'package.json'), 'utf8'),
      '.svc/package-lock.json': await readFile(join(svc, 'package-lock.json'), 'utf8'),
    },
    tgz,
  };
}

interface RunsLogs {
  logs: Record<string, Array<{ text: string }>>;
}

await eachDatabase(t, async (t, db) => {
  const s3 = await startS3Server({ bucket: 'svc-e2e' });
  t.teardown(() => s3.stop());
  const stack = await startJobsStack(t, db, { orchestratorEnv: s3.env() });
  // The test's own view of the bucket (the orchestrator's settings, its own client).
  const bucket = new S3Storage(Value.Default(S3StorageConfig, s3.pluginConfig()) as S3StorageConfig);
  t.teardown(() => bucket.close());
  const keys = async (prefix: string) => (await bucket.list(prefix)).objects.map((o) => o.key);

  const pat = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', 'alice', '--json']);
  t.equal(pat.code, 0, pat.stderr);
  const token = (JSON.parse(pat.stdout) as { token: string }).token;
  const login = await stack.svc(['login', '--token', token, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);
  const logsOf = async (runId: string): Promise<string[]> => {
    const out = await stack.svc(['runs', 'logs', runId, '--json']);
    t.equal(out.code, 0, out.stderr);
    return Object.values((JSON.parse(out.stdout) as RunsLogs).logs).flatMap((lines) => lines.map((l) => l.text));
  };

  await stack.startAgent({ SVC_AGENT_ID: 'e2e-s3-agent' });
  const deps = await dependencyFiles(join(stack.root, 'deps-scratch'));
  // Binary files go straight into the work tree; pushWorkflow writes the text ones and commits all.
  await mkdir(join(stack.remote.work, '.svc', 'vendor'), { recursive: true });
  await writeFile(join(stack.remote.work, '.svc', 'vendor', 'greet-1.0.0.tgz'), deps.tgz);

  await t.test('first push: build job through pre-signed URLs, dependency from the bucket, user cache saved, payload in the event log', async (t) => {
    const sha = await stack.pushWorkflow({ '.svc/workflows/ci.ts': WORKFLOW, ...deps.text, 'README.md': 's3 e2e\n' }, 'add ci');
    const run = await stack.waitForRun(sha, 300_000);
    const jobs = await stack.jobsOf(run.id);
    t.equal(run.status, 'completed', jobs.map((j) => `${j.display_name} [${j.kind}] ${j.status} ${j.reason ?? ''}`).join('\n'));
    t.ok(jobs.some((j) => j.kind === 'build' && j.status === 'completed'), 'a build job made the tarballs');
    const lines = await logsOf(run.id);
    t.ok(lines.includes('DEP hello s3'), 'the dependency from the cached tarball was imported');
    t.ok(lines.includes('CACHE restore miss'));
    t.ok(lines.includes('CACHE saved true'), 'the user cache was saved');

    const source = await keys('source/v2/');
    t.ok(source.some((k) => k.endsWith('.tar.gz')) && source.some((k) => k.endsWith('.hash')), `source tarball and pointer in the bucket: ${source.join(', ')}`);
    const depKeys = await keys('deps/');
    t.ok(depKeys.some((k) => k.endsWith('.tar.gz')) && depKeys.some((k) => k.endsWith('.hash')), `dependency tarball and pointer in the bucket: ${depKeys.join(', ')}`);
    const userKey = `cache/${ORG}/shared/${createHash('sha256').update('s3-user-cache-v1').digest('hex')}.tar`;
    t.ok((await keys(`cache/${ORG}/`)).includes(userKey), 'the committed user cache entry');
    t.same(await keys(`cache/${ORG}/tmp/`), [], 'no temporary upload left after the commit copy');

    // Data moved between agent and bucket directly: pre-signed PUTs and GETs, signatures checked.
    const presigned = s3.requests.filter((r) => r.auth === 'presigned' && r.status === 200);
    t.ok(presigned.some((r) => r.method === 'PUT' && r.key.startsWith('source/v2/') && r.key.endsWith('.tar.gz')), 'the agent PUT the source tarball');
    t.ok(presigned.some((r) => r.method === 'PUT' && r.key.startsWith('deps/') && r.key.endsWith('.tar.gz')), 'the agent PUT the dependency tarball');
    t.ok(presigned.some((r) => r.method === 'GET' && r.key.startsWith('source/v2/')), 'the job downloaded the source tarball');
    t.ok(presigned.some((r) => r.method === 'GET' && r.key.startsWith('deps/')), 'the job downloaded the dependency tarball');
    t.ok(presigned.some((r) => r.method === 'PUT' && r.key.startsWith(`cache/${ORG}/tmp/`)), 'the user cache went up to a temporary object');
    t.notOk(existsSync(join(stack.root, 'orch', 'storage')), 'nothing in a filesystem storage under the data dir');

    const payloads = await keys(`event-log/${ORG}/`);
    t.ok(payloads.length >= 1, `the push payload is in the event log: ${payloads.join(', ')}`);
    const response = await fetch(`${stack.relayUrl}/orgs/${ORG}/runs/${run.id}/payload`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await response.json()) as { payload: unknown };
    t.equal(response.status, 200, JSON.stringify(body).slice(0, 300));
    t.match(JSON.stringify(body.payload), sha, 'the run payload, read from the bucket through the relay, is the push');
  });

  await t.test('second push: source cache hit (no build job), user cache restored from the bucket', async (t) => {
    const sha = await stack.pushWorkflow({ 'README.md': 'second\n' }, 'second push');
    const run = await stack.waitForRun(sha, 300_000);
    const jobs = await stack.jobsOf(run.id);
    t.equal(run.status, 'completed', jobs.map((j) => `${j.display_name} ${j.status} ${j.reason ?? ''}`).join('\n'));
    t.notOk(jobs.some((j) => j.kind === 'build'), 'no build job: the source tarball is cached in the bucket');
    const lines = await logsOf(run.id);
    t.ok(lines.includes('DEP hello s3'), 'the dependency again');
    t.ok(lines.includes('CACHE restore hit s3-user-cache-v1 cached-in-s3'), 'the first run’s user cache restored');
    t.notOk(lines.some((l) => l.startsWith('CACHE saved')));
  });
});
