// The agent side of `svc run remote` (agent/jobs/overlay.ts): a sealed overlay served over a
// REAL HTTP server, packed by the CLI's own packer from a REAL git repository, applied on a
// checkout: modified and new files written, deleted files removed; a box under another key, a
// tampered box and a deletion outside the checkout are refused.
import { randomBytes, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { applyOverlay } from '../../../agent/jobs/overlay.ts';
import { packOverlay } from '../../../cli/remote-run/overlay.ts';
import { boxEphemeralKey, boxKey, rawPublicKey, sealBox } from '../../../core/remote-run-box.ts';
import { git, gitEnv } from '../../fixtures/git-repos.ts';

const recipient = generateKeyPairSync('x25519');
const served = new Map<string, Buffer>();
const server = createServer((req, res) => {
  const body = served.get(req.url ?? '');
  if (body === undefined) return void res.writeHead(404).end();
  res.writeHead(200, { 'content-length': body.length }).end(body);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

function serve(name: string, box: Buffer): { url: string; key: string } {
  served.set(`/${name}`, box);
  return { url: `${base}/${name}`, key: boxKey(recipient.privateKey, boxEphemeralKey(box)).toString('base64') };
}

function packed(deleted: string[], tarGz = Buffer.alloc(0)): Buffer {
  const manifest = Buffer.from(JSON.stringify({ deleted }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(manifest.length);
  return Buffer.concat([length, manifest, tarGz]);
}

const dir = await mkdtemp(join(tmpdir(), 'svc-agent-overlay-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

t.test('applies the working tree on the checkout', async (t) => {
  const repo = join(dir, 'repo');
  await mkdir(join(repo, 'src'), { recursive: true });
  const prev = process.env;
  process.env = { ...gitEnv() };
  t.teardown(() => void (process.env = prev));
  await git(repo, ['init', '--quiet', '-b', 'main']);
  await writeFile(join(repo, 'src/a.txt'), 'committed\n');
  await writeFile(join(repo, 'gone.txt'), 'committed\n');
  await git(repo, ['add', '--all']);
  await git(repo, ['commit', '--quiet', '-m', 'base']);
  // The checkout the agent made at that commit.
  const checkout = join(dir, 'checkout');
  await git(dir, ['clone', '--quiet', repo, checkout]);
  await writeFile(join(repo, 'src/a.txt'), 'changed\n');
  await writeFile(join(repo, 'src/new.txt'), 'new\n');
  await rm(join(repo, 'gone.txt'));
  const overlay = await packOverlay(repo, undefined, [{ path: '.svc/svc.lock.json', text: '{"compiled":"in memory"}' }]);
  const lines: string[] = [];
  const jobRoot = join(dir, 'job');
  await mkdir(jobRoot, { recursive: true });
  const result = await applyOverlay({ overlay: serve('ok', sealBox(rawPublicKey(recipient.publicKey), overlay.packed)), jobRoot, srcDir: checkout, log: (l) => lines.push(l) });
  t.equal(await readFile(join(checkout, 'src/a.txt'), 'utf8'), 'changed\n');
  t.equal(await readFile(join(checkout, 'src/new.txt'), 'utf8'), 'new\n');
  await t.rejects(readFile(join(checkout, 'gone.txt')), { code: 'ENOENT' }, 'the deleted file is gone');
  t.equal(result.deleted, 1);
  t.equal(await readFile(join(checkout, '.svc/svc.lock.json'), 'utf8'), '{"compiled":"in memory"}', 'the lock compiled in memory is written');
  t.match(lines.join('\n'), /working-tree overlay applied/);
});

t.test('refusals', async (t) => {
  const srcDir = join(dir, 'refusals');
  const jobRoot = join(dir, 'job-refusals');
  await mkdir(srcDir, { recursive: true });
  await mkdir(jobRoot, { recursive: true });
  await writeFile(join(dir, 'outside.txt'), 'keep\n');
  const publicKey = rawPublicKey(recipient.publicKey);
  const escape = serve('escape', sealBox(publicKey, packed(['../outside.txt'])));
  await t.rejects(applyOverlay({ overlay: escape, jobRoot, srcDir, log: () => undefined }), { code: 'SVC_ERR_AGENT_OVERLAY_INVALID' });
  t.equal(await readFile(join(dir, 'outside.txt'), 'utf8'), 'keep\n', 'nothing outside the checkout removed');
  const writeOut = Buffer.from(JSON.stringify({ deleted: [], write: [{ path: '../evil.txt', text: 'x' }] }));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(writeOut.length);
  await t.rejects(applyOverlay({ overlay: serve('write-out', sealBox(publicKey, Buffer.concat([len, writeOut]))), jobRoot, srcDir, log: () => undefined }), { code: 'SVC_ERR_AGENT_OVERLAY_INVALID' });
  await t.rejects(readFile(join(dir, 'evil.txt')), { code: 'ENOENT' }, 'nothing written outside the checkout');
  const gitDir = serve('git', sealBox(publicKey, packed(['.git'])));
  await t.rejects(applyOverlay({ overlay: gitDir, jobRoot, srcDir, log: () => undefined }), { code: 'SVC_ERR_AGENT_OVERLAY_INVALID' });
  const box = sealBox(publicKey, packed([]));
  const wrongKey = { ...serve('wrong', box), key: randomBytes(32).toString('base64') };
  await t.rejects(applyOverlay({ overlay: wrongKey, jobRoot, srcDir, log: () => undefined }), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
  const tampered = Buffer.from(box);
  tampered[tampered.length - 1]! ^= 1;
  await t.rejects(applyOverlay({ overlay: serve('tampered', tampered), jobRoot, srcDir, log: () => undefined }), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
});
