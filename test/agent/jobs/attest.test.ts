// ctx.attestProvenance on the agent, before anything reaches the orchestrator: a subject must be
// a regular file inside the job workspace (no `..`, no absolute path elsewhere, no symlink that
// leads out, no directory, nothing missing), two subjects may not share a bundle name, and the
// args must have the runner-API shape. Each refusal has its code, sends no message and writes no
// bundle. (The accepted path, through a real orchestrator, is test/e2e/provenance.test.ts.)
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { handleRunnerApi, type RunnerApiContext } from '../../../agent/jobs/runner-api.ts';
import { SecretSet } from '../../../agent/logs/masker.ts';


const root = await mkdtemp(join(tmpdir(), 'svc-attest-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
const workspace = join(root, 'ws');
const scratch = join(root, 'scratch');
const outside = join(root, 'outside');
await mkdir(join(workspace, 'dist', 'nested'), { recursive: true });
await mkdir(join(workspace, 'other'), { recursive: true });
await mkdir(scratch);
await mkdir(outside);
await writeFile(join(workspace, 'dist', 'app.tgz'), 'app');
await writeFile(join(workspace, 'other', 'app.tgz'), 'other app');
await writeFile(join(outside, 'secret.txt'), 'not yours');
await symlink(join(outside, 'secret.txt'), join(workspace, 'dist', 'leak.txt'));
await symlink(outside, join(workspace, 'dist', 'out'));

const sent: unknown[] = [];
const ctx: RunnerApiContext = {
  jobId: '00000000-0000-4000-8000-000000000001',
  workspace,
  scratch,
  secrets: new SecretSet(),
  request: async (message) => {
    sent.push(message);
    throw new Error('a refused subject must not reach the orchestrator');
  },
  send: (message) => void sent.push(message),
  signal: new AbortController().signal,
};

const attest = (subjects: unknown, predicate?: unknown) => handleRunnerApi('attest', predicate === undefined ? { subjects } : { subjects, predicate }, ctx);

const CASES: Array<[string, unknown, string | RegExp]> = [
  ['a relative path out of the workspace', [{ path: '../outside/secret.txt' }], 'SVC_ERR_AGENT_API_PATH'],
  ['an absolute path elsewhere', [{ path: join(outside, 'secret.txt') }], 'SVC_ERR_AGENT_API_PATH'],
  ['a symlink to a file outside', [{ path: 'dist/leak.txt' }], 'SVC_ERR_AGENT_API_PATH'],
  ['a path through a symlinked directory outside', [{ path: 'dist/out/secret.txt' }], 'SVC_ERR_AGENT_API_PATH'],
  ['a missing file', [{ path: 'dist/missing.tgz' }], 'SVC_ERR_AGENT_API_PATH'],
  ['a directory', [{ path: 'dist/nested' }], 'SVC_ERR_AGENT_ATTEST_SUBJECT'],
  ['two subjects with one bundle name', [{ path: 'dist/app.tgz' }, { path: 'other/app.tgz' }], 'SVC_ERR_AGENT_API_ARGS'],
  ['no subjects', [], 'SVC_ERR_AGENT_API_ARGS'],
  ['a subject without a path', [{ name: 'dist/app.tgz' }], 'SVC_ERR_AGENT_API_ARGS'],
];

for (const [name, subjects, code] of CASES) {
  t.test(`refused: ${name}`, async (t) => {
    await t.rejects(attest(subjects), { code });
    t.same(sent, [], 'nothing was sent to the orchestrator');
  });
}

t.test('refusal messages say what to do', async (t) => {
  await t.rejects(attest([{ path: 'dist/nested' }]), { message: /subject "dist\/nested" is not a readable regular file in the job workspace: it is a directory \(attest a file, for example a tarball of it\)/ });
  await t.rejects(attest([{ path: 'dist/app.tgz' }, { path: 'other/app.tgz' }]), { message: /would both store bundle app\.tgz\.svc\.json; attest them in separate jobs or rename one/ });
  await t.rejects(attest([{ path: 'dist/leak.txt' }]), { message: /outside the job workspace \(a symlink leads out of it\)/ });
});

t.test('no bundle file was written by any refusal', async (t) => {
  const files = [...(await readdir(join(workspace, 'dist'))), ...(await readdir(join(workspace, 'other')))];
  t.same(files.filter((f) => f.endsWith('.svc.json')), []);
});

t.test('contrast: a file inside the workspace is hashed by the agent and sent as the subject', async (t) => {
  await t.rejects(attest([{ path: join(workspace, 'dist', 'app.tgz') }], { target: 'x' }), { message: /must not reach the orchestrator/ });
  t.match(sent, [
    {
      type: 'attestation.create.request',
      jobId: ctx.jobId,
      artifact: { name: 'dist/app.tgz', sha256: createHash('sha256').update('app').digest('hex') },
      parameters: { target: 'x' },
    },
  ]);
  sent.length = 0;
});
