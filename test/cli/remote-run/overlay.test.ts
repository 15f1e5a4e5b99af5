// The working-tree overlay of `svc run remote` (cli/remote-run/overlay.ts) from a REAL git
// repository: modified, staged, untracked and deleted files; git-ignored paths, .svcignore
// matches, .git and the local secret files left out; the size thresholds with injected limits.
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { checkUploadSize, overlayPaths, packOverlay, UPLOAD_LIMITS } from '../../../cli/remote-run/overlay.ts';
import { git, gitEnv } from '../../fixtures/git-repos.ts';

t.test('what the overlay holds', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-overlay-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const write = async (path: string, text: string) => {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), text);
  };
  await git(dir, ['init', '--quiet', '-b', 'main']);
  await write('.gitignore', 'build/\n.svc/.secrets\n');
  await write('.svcignore', 'big/**\n*.log\n');
  await write('kept.txt', 'v1\n');
  await write('staged.txt', 'v1\n');
  await write('gone.txt', 'bye\n');
  await write('.svc/workflows/ci.ts', 'export {};\n');
  await git(dir, ['add', '--all']);
  await git(dir, ['commit', '--quiet', '-m', 'base']);
  await write('kept.txt', 'v2 modified\n');
  await write('staged.txt', 'v2 staged\n');
  await git(dir, ['add', 'staged.txt']);
  await rm(join(dir, 'gone.txt'));
  await write('new/file.txt', 'new\n');
  await write('build/out.js', 'ignored by git\n');
  await write('big/blob.bin', 'ignored by .svcignore\n');
  await write('debug.log', 'ignored by .svcignore\n');
  await write('.svc/.secrets', 'API_KEY=x\n');
  await write('.svc/.env.local', 'OTHER=y\n');
  await write('.svc/workflows/ci.ts', 'export const changed = 1;\n');

  const prev = process.env;
  process.env = { ...gitEnv() };
  t.teardown(() => void (process.env = prev));
  const paths = await overlayPaths(dir);
  t.same(paths, { files: ['.svc/workflows/ci.ts', 'kept.txt', 'new/file.txt', 'staged.txt'], deleted: ['gone.txt'] });

  const packed = await packOverlay(dir);
  const length = packed.packed.readUInt32BE(0);
  t.same(JSON.parse(packed.packed.subarray(4, 4 + length).toString()), { deleted: ['gone.txt'] });
  const tarText = gunzipSync(packed.packed.subarray(4 + length)).toString('latin1');
  for (const f of paths.files) t.ok(tarText.includes(f), `${f} packed`);
  t.ok(tarText.includes('v2 modified'), 'the working tree\'s content');
  for (const f of ['build/out.js', 'big/blob.bin', 'debug.log', '.svc/.secrets', '.svc/.env.local', 'API_KEY']) t.notOk(tarText.includes(f), `${f} not packed`);
  t.equal((await readFile(join(dir, 'kept.txt'), 'utf8')), 'v2 modified\n', 'the tree is untouched');
});

t.test('size thresholds (spec Limits), with small injected limits', async (t) => {
  const limits = { warnBytes: 50, maxBytes: 500 };
  t.equal(checkUploadSize(49, limits), 'ok');
  t.equal(checkUploadSize(50, limits), 'warn');
  t.equal(checkUploadSize(500, limits), 'warn');
  t.throws(() => checkUploadSize(501, limits), { code: 'SVC_ERR_REMOTE_RUN_TOO_LARGE', message: /over the 0\.0 MB limit/ });
  t.same(UPLOAD_LIMITS, { warnBytes: 50_000_000, maxBytes: 500_000_000 }, 'the spec\'s 50 MB and 500 MB');
  t.equal(checkUploadSize(49_999_999), 'ok');
  t.equal(checkUploadSize(50_000_000), 'warn');
  t.throws(() => checkUploadSize(500_000_001), { code: 'SVC_ERR_REMOTE_RUN_TOO_LARGE', message: /500\.0 MB limit/ });
});
