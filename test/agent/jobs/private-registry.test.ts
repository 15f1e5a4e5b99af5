// A workflow's `registries` and `installEnv` on the agent's dependency install, against a real
// private npm registry: Verdaccio started in this process on 127.0.0.1 with a temp storage,
// htpasswd authentication and `@private/*` readable by authenticated users only (no uplinks:
// nothing leaves the machine). A package is published to it here; a job whose `.svc/` depends on
// it runs through the agent and the REAL step runner (the workflow imports the package):
// - with the registry's token (jobConfig.install, as dispatch sends it) the install succeeds;
// - without the token the job fails before npm runs, naming the secret; a wrong token fails
//   with npm's 401 (the registry really refuses anonymous and bad credentials);
// - the token never appears in the job's logs (a step prints it: masked), no file holding it
//   remains after the job, and neither it nor an installEnv variable reaches a step;
// - installEnv: a `.svc/.npmrc` reading `${PRIVATE_TOKEN}` installs only when the secret is projected;
// - a build job skips the install of such a workflow (nothing enters the shared dependency cache);
// - `svc run --local` installs with the token from `.svc/.secrets`.
import { createRequire } from 'node:module';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { execa } from 'execa';
import { pino } from 'pino';
import t from 'tap';
import * as tar from 'tar';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../../agent/agent.ts';
import { parseAgentEnv } from '../../../agent/env.ts';
import { nerfDart, userConfigText, withPrivateInstall, type JobInstall } from '../../../agent/jobs/private-install.ts';
import { pathWithNode } from '../../../agent/jobs/restore.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { runLocal } from '../../../cli/local-run/run-local.ts';
import { commitAll, tempRepo } from '../../fixtures/workflow-trees/index.ts';
import type { AgentToOrchestrator } from '../../../schemas/wire/agent.ts';
import { dispatchOf } from '../fixtures/agent-harness.ts';
import { fileServer, gitRepo, makeTree, tarball, tempDir } from '../fixtures/trees.ts';
import { startOrchestratorDouble } from '../fixtures/ws-orchestrator.ts';

const { runServer } = createRequire(import.meta.url)('verdaccio') as { runServer(config: unknown): Promise<Server> };

const tmp = await tempDir('svc-private-registry-');
// Everything the agent and npm put in a temp directory lands here: scanned for the token below.
const agentTmp = join(tmp.dir, 'tmp');
await mkdir(agentTmp);
const savedTmp = process.env['TMPDIR'];
process.env['TMPDIR'] = agentTmp;

// The registry: one instance for the file.
const registryDir = join(tmp.dir, 'registry');
const server = await runServer({
  self_path: registryDir,
  storage: join(registryDir, 'storage'),
  auth: { htpasswd: { file: join(registryDir, 'htpasswd'), max_users: 10 } },
  uplinks: {},
  packages: { '@private/*': { access: '$authenticated', publish: '$authenticated' } },
  log: { type: 'stdout', format: 'pretty', level: 'fatal' },
  web: { enable: false },
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const REGISTRY = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;

const orch = await startOrchestratorDouble();
const files = await fileServer();
const workDir = join(tmp.dir, 'work');
const agent = await startAgent({
  settings: parseAgentEnv({ SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: workDir }),
  agentId: 'private-registry',
  logger: pino({ level: 'silent' }),
  sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'auto', network: true })]]),
  runnerPath: DEFAULT_RUNNER_PATH,
});
t.teardown(async () => {
  await agent.stop();
  await orch.close();
  await files.close();
  await new Promise((resolve) => server.close(resolve));
  if (savedTmp === undefined) delete process.env['TMPDIR'];
  else process.env['TMPDIR'] = savedTmp;
  await tmp.cleanup();
});

// A user and its token, then @private/pkg published with it, both through the registry's HTTP
// API (what `npm adduser` and `npm publish` send), and the workflow's lockfile as `npm install`
// writes it: no npm run, and no file holding the token, in the set-up.
const created = await fetch(`${REGISTRY}-/user/org.couchdb.user:ci-bot`, {
  method: 'PUT',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'ci-bot', password: 'ci-bot-password-1' }),
});
const TOKEN = ((await created.json()) as { token: string }).token;
const manifest = { name: '@private/pkg', version: '1.0.0', type: 'module', main: 'index.js' };
await mkdir(join(tmp.dir, 'pkg', 'package'), { recursive: true });
await writeFile(join(tmp.dir, 'pkg', 'package', 'package.json'), JSON.stringify(manifest));
await writeFile(join(tmp.dir, 'pkg', 'package', 'index.js'), "export const greeting = 'hello from the private registry';\n");
await tar.c({ gzip: true, file: join(tmp.dir, 'pkg.tgz'), cwd: join(tmp.dir, 'pkg'), portable: true }, ['package']);
const tgz = await readFile(join(tmp.dir, 'pkg.tgz'));
const TARBALL = `${REGISTRY}@private/pkg/-/pkg-1.0.0.tgz`;
const integrity = `sha512-${createHash('sha512').update(tgz).digest('base64')}`;
const published = await fetch(`${REGISTRY}@private%2fpkg`, {
  method: 'PUT',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
  body: JSON.stringify({
    _id: manifest.name,
    name: manifest.name,
    'dist-tags': { latest: '1.0.0' },
    versions: { '1.0.0': { ...manifest, _id: `${manifest.name}@1.0.0`, dist: { tarball: TARBALL, shasum: createHash('sha1').update(tgz).digest('hex'), integrity } } },
    _attachments: { 'pkg-1.0.0.tgz': { content_type: 'application/octet-stream', data: tgz.toString('base64'), length: tgz.length } },
  }),
});
if (!published.ok) throw new Error(`publishing @private/pkg failed: ${published.status} ${await published.text()}`);
const svcPackage = JSON.stringify({ name: 'wf', version: '1.0.0', private: true, type: 'module', dependencies: { '@private/pkg': '1.0.0' } });
const svcLock = JSON.stringify({
  name: 'wf',
  version: '1.0.0',
  lockfileVersion: 3,
  requires: true,
  packages: { '': { name: 'wf', version: '1.0.0', dependencies: { '@private/pkg': '1.0.0' } }, 'node_modules/@private/pkg': { version: '1.0.0', resolved: TARBALL, integrity } },
});

// The step prints the token to prove it is masked; the tree holds it reversed, so that the tree
// (kept in the agent's source cache) is not itself a copy the scan would find.
const REVERSED = [...TOKEN].reverse().join('');
const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
import { greeting } from '@private/pkg';
export default workflow('ci', {
  on: push(),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: (s) => s.step('use', async (ctx) => {
        ctx.log.info('pkg says ' + greeting);
        ctx.log.info('leak ' + ${JSON.stringify(REVERSED)}.split('').reverse().join(''));
        for (const name of ['PRIVATE_TOKEN', 'SVC_REGISTRY_TOKEN_0', 'npm_config_userconfig']) ctx.log.info('step env ' + name + '=' + (process.env[name] ?? 'unset'));
        return {};
      }),
    }),
  },
});
`;

async function served(name: string, extra: Record<string, string>) {
  const tree = await makeTree(join(tmp.dir, name), { '.svc/workflows/ci.ts': WORKFLOW, '.svc/package.json': svcPackage, '.svc/package-lock.json': svcLock, ...extra });
  const digest = await tarball(tree.dir, join(tmp.dir, `${name}.tar.gz`));
  files.put(name, await readFile(join(tmp.dir, `${name}.tar.gz`)));
  return { url: files.url(name), digest, contentHash: tree.contentHash };
}
const registryTree = await served('registry-tree', {});
const npmrcTree = await served('npmrc-tree', { '.svc/.npmrc': `@private:registry=${REGISTRY}\n${nerfDart(REGISTRY)}:_authToken=\${PRIVATE_TOKEN}\n` });

async function runJob(tree: { url: string; digest: string; contentHash: string }, install: JobInstall | undefined) {
  const d = dispatchOf({ sourceTarUrl: tree.url, sourceTarDigest: tree.digest, jobConfig: { contentHash: tree.contentHash, env: {}, ...(install === undefined ? {} : { install }) } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 120_000);
  const frames = orch.received.filter((m): m is Extract<AgentToOrchestrator, { type: 'log.chunk' }> => m.type === 'log.chunk' && m.jobId === d.jobId);
  const text = frames.flatMap((m) => m.lines.map((l) => `${l.step}|${l.text}`)).join('\n');
  return { done, text, wire: JSON.stringify(orch.received.filter((m) => (m as { jobId?: string }).jobId === d.jobId)) };
}

/** Files under `dir` whose bytes contain `needle` (the agent's work dir and temp dir after a job). */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(needle)) found.push(path);
  }
  return found;
}

const registries = (token?: string): JobInstall => ({
  registries: [{ url: REGISTRY, scope: '@private', alwaysAuth: true, tokenSecret: 'npm:NPM_TOKEN', ...(token === undefined ? {} : { token }) }],
  env: [],
});

t.test('with the token: the private package installs and the workflow imports it; the token is masked and gone', async (t) => {
  t.ok(TOKEN.length > 16, 'the registry issued a token');
  const { done, text, wire } = await runJob(registryTree, registries(TOKEN));
  t.equal(done.status, 'completed', `${done.reason ?? ''}\n${text}`);
  t.match(text, `dependency install with the workflow's registries: @private → ${REGISTRY} (token npm:NPM_TOKEN, always-auth)`);
  t.match(text, 'use|pkg says hello from the private registry');
  t.match(text, 'use|leak ***', 'a step printing the token shows it masked');
  t.notOk(wire.includes(TOKEN), 'the token is in no frame the agent sent');
  for (const name of ['PRIVATE_TOKEN', 'SVC_REGISTRY_TOKEN_0', 'npm_config_userconfig']) t.match(text, `step env ${name}=unset`, `${name} does not reach a step`);
  t.same(await filesHolding(workDir, TOKEN), [], 'no file in the agent work dir holds the token');
  t.same(await filesHolding(agentTmp, TOKEN), [], 'no file in the temp dir holds the token');
  t.same((await readdir(agentTmp)).filter((n) => n.startsWith('svc-install-')), [], 'the per-install config directory is removed');
});

t.test('without the token the job fails before npm runs, naming the secret; a wrong token gets npm 401', async (t) => {
  const missing = await runJob(registryTree, registries());
  t.equal(missing.done.status, 'failed');
  t.match(missing.done.reason, `registries[0] (@private → ${REGISTRY}) needs secret npm:NPM_TOKEN, which was not released to this job (secret context "npm" has no key NPM_TOKEN`);
  t.notMatch(missing.text, 'npm ci --ignore-scripts', 'no install was started');

  const wrong = 'wrong-token-0123456789';
  const bad = await runJob(registryTree, registries(wrong));
  t.equal(bad.done.status, 'failed');
  t.match(bad.done.reason, /inline dependency install \(npm ci in \.svc\/\) failed with exit code 1: .*E401/s);
  t.notOk(bad.wire.includes(wrong), 'the wrong token is masked too');

  const anonymous = await runJob(registryTree, undefined);
  t.equal(anonymous.done.status, 'failed', 'without registries npm cannot even find @private/pkg');
  t.same((await readdir(agentTmp)).filter((n) => n.startsWith('svc-install-')), [], 'nothing left after failures');
});

t.test('installEnv: the secret is a variable of the install only; a .svc/.npmrc reading it installs', async (t) => {
  const env: JobInstall = { registries: [], env: [{ name: 'PRIVATE_TOKEN', secret: 'npm:PRIVATE_TOKEN', value: TOKEN }] };
  const { done, text, wire } = await runJob(npmrcTree, env);
  t.equal(done.status, 'completed', `${done.reason ?? ''}\n${text}`);
  t.match(text, "dependency install with the workflow's installEnv: PRIVATE_TOKEN from npm:PRIVATE_TOKEN");
  t.match(text, 'use|pkg says hello from the private registry');
  t.match(text, 'step env PRIVATE_TOKEN=unset', 'the installEnv variable is not in the step environment');
  t.notOk(wire.includes(TOKEN));
  t.same(await filesHolding(workDir, TOKEN), []);

  const without = await runJob(npmrcTree, undefined);
  t.equal(without.done.status, 'failed', 'the same tree without the installEnv secret cannot install');
  t.match(without.done.reason, 'inline dependency install (npm ci in .svc/) failed');
});

t.test('the per-install config: 0700 directory, 0600 file, no token in it; removed on failure and on cancel', async (t) => {
  const install = registries(TOKEN);
  t.equal(userConfigText({ registries: [{ url: 'https://npm.example.test/acme', alwaysAuth: false, tokenSecret: 'c:K', token: 'x' }], env: [] }), 'registry=https://npm.example.test/acme\n//npm.example.test/acme/:_authToken=${SVC_REGISTRY_TOKEN_0}\n');
  let seen = '';
  await withPrivateInstall({ PATH: pathWithNode() }, install, () => undefined, async (env) => {
    const file = env['npm_config_userconfig']!;
    seen = file;
    t.equal((await stat(file)).mode & 0o777, 0o600);
    t.equal((await stat(join(file, '..'))).mode & 0o777, 0o700);
    const text = await readFile(file, 'utf8');
    t.notOk(text.includes(TOKEN), 'the file names the variable, not the token');
    t.match(text, `@private:registry=${REGISTRY}\n${nerfDart(REGISTRY)}:_authToken=\${SVC_REGISTRY_TOKEN_0}\n${nerfDart(REGISTRY)}:always-auth=true`);
    t.equal(env['SVC_REGISTRY_TOKEN_0'], TOKEN);
  });
  await t.rejects(stat(join(seen, '..')), { code: 'ENOENT' }, 'removed after the install');

  const aborter = new AbortController();
  const cancelled = withPrivateInstall({ PATH: pathWithNode() }, install, () => undefined, async (env) => {
    seen = env['npm_config_userconfig']!;
    setImmediate(() => aborter.abort(new Error('job cancelled')));
    await execa('sleep', ['30'], { cancelSignal: aborter.signal });
  });
  await t.rejects(cancelled, /cancel/i);
  await t.rejects(stat(join(seen, '..')), { code: 'ENOENT' }, 'removed after a cancelled install');
});

t.test('a build job does not install a workflow with registries: its dependencies stay out of the shared cache', async (t) => {
  const tree = await makeTree(join(tmp.dir, 'build-repo'), { '.svc/workflows/ci.ts': WORKFLOW, '.svc/package.json': svcPackage, '.svc/package-lock.json': svcLock });
  // The lock as `svc compile` writes it for such a workflow (the lock is outside the content hash).
  const lock = { schemaVersion: 42, lockfileHash: `npm:${'0'.repeat(64)}`, workflows: [{ name: 'ci', source: '.svc/workflows/ci.ts#default', contexts: ['npm'], registries: [{ url: REGISTRY, scope: '@private', tokenSecret: 'npm:NPM_TOKEN', alwaysAuth: true }] }] };
  await writeFile(join(tree.dir, '.svc', 'svc.lock.json'), JSON.stringify(lock));
  const sha = await gitRepo(tree.dir);
  const d = dispatchOf({ sourceAuth: { cloneUrl: `file://${tree.dir}` }, jobConfig: { build: true, sha, contentHash: tree.contentHash, env: {} } });
  orch.dispatch(d);
  const upload = await orch.waitFor('cache.upload.request', (m) => m.jobId === d.jobId, 60_000);
  orch.send({ type: 'cache.upload.response', requestId: upload.requestId, url: files.url('build-upload') });
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
  t.equal(done.status, 'completed', done.reason ?? '');
  const skipped = done.steps.find((s) => s.name === 'install dependencies');
  t.match(skipped, { status: 'skipped', reason: /installs with registries\/installEnv secrets; its dependencies are installed by each job, never put in the shared dependency cache/ });
  t.same(orch.received.filter((m) => m.type === 'cache.upload.complete' && m.jobId === d.jobId).map((m) => (m as { cacheType: string }).cacheType), ['source'], 'only the source bundle is uploaded');
});

t.test('svc run --local: the token from .svc/.secrets reaches the one install of .svc/, masked; missing, the run says which', async (t) => {
  // Imported in the step: the developer's machine compiling the lock need not have it installed.
  const local = `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push({ branches: ['main'] }),
  contexts: ['npm'],
  registries: [{ url: ${JSON.stringify(REGISTRY)}, scope: '@private', tokenSecret: 'npm:NPM_TOKEN' }],
  jobs: { build: job({ runsOn: 'linux', steps: (s) => s.step('use', async (ctx) => { ctx.log.info('pkg says ' + (await import('@private/pkg')).greeting); return {}; }) }) },
});
`;
  const files = { '.svc/.svcignore': 'node_modules/\ntypes/\n.secrets\npackage-lock.json\n', '.svc/workflows/ci.ts': local, '.svc/package.json': svcPackage, '.svc/package-lock.json': svcLock };
  const run = async (secrets: string) => {
    const dir = tempRepo(t, { ...files, '.svc/.secrets': secrets }, { git: true });
    commitAll(dir, 'workflows');
    let out = '';
    const summary = await runLocal({ cwd: dir, event: 'push', env: [], shellEnv: { PATH: process.env['PATH'] }, debug: false, write: (text) => void (out += text), diag: () => undefined });
    return { summary, out };
  };
  const ok = await run(`npm:NPM_TOKEN=${TOKEN}\n`);
  t.equal(ok.summary.status, 'completed', ok.out);
  t.match(ok.out, '[build] use | pkg says hello from the private registry');
  t.match(ok.out, `dependency install with the workflow's registries: @private → ${REGISTRY} (token npm:NPM_TOKEN)`);
  t.notOk(ok.out.includes(TOKEN));
  const missing = await run('OTHER=1\n').then(
    (r) => r.out,
    (error: unknown) => String((error as Error).message),
  );
  t.match(missing, `registries[0] (@private → ${REGISTRY}) needs secret npm:NPM_TOKEN, which was not released to this job`);
});
