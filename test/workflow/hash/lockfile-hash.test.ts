import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { detectLockfile, lockfileHash } from '../../../workflow/hash/lockfile-hash.ts';
import { treeFrom } from '../../fixtures/trees/build-tree.ts';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

t.test('no lockfile: undefined (the field is omitted)', async (t) => {
  const root = await treeFrom(t, { '.svc/package.json': '{}\n', 'package-lock.json': '{}\n' });
  t.equal(await lockfileHash(root), undefined, 'a repo-root package-lock.json is not the .svc project lockfile');
});

t.test('each manager alone', async (t) => {
  const npm = await treeFrom(t, { '.svc/package-lock.json': '{ "lockfileVersion": 3 }\n' });
  t.equal(await lockfileHash(npm), `npm:${sha('{ "lockfileVersion": 3 }\n')}`);
  t.same(await detectLockfile(npm), { manager: 'npm', path: '.svc/package-lock.json', lockfileHash: `npm:${sha('{ "lockfileVersion": 3 }\n')}` });
  const pnpm = await treeFrom(t, { '.svc/x.ts': '', 'pnpm-lock.yaml': 'lockfileVersion: 9\n' });
  t.equal(await lockfileHash(pnpm), `pnpm:${sha('lockfileVersion: 9\n')}`);
  const yarn = await treeFrom(t, { '.svc/x.ts': '', 'yarn.lock': '# yarn lockfile v1\n' });
  t.equal(await lockfileHash(yarn), `yarn:${sha('# yarn lockfile v1\n')}`);
  t.match(await lockfileHash(yarn), /^yarn:[0-9a-f]{64}$/);
});

t.test('precedence: .svc/package-lock.json, then pnpm-lock.yaml, then yarn.lock', async (t) => {
  const all = await treeFrom(t, { '.svc/package-lock.json': 'n\n', 'pnpm-lock.yaml': 'p\n', 'yarn.lock': 'y\n' });
  t.equal((await detectLockfile(all))?.manager, 'npm');
  const noNpm = await treeFrom(t, { '.svc/x': '', 'pnpm-lock.yaml': 'p\n', 'yarn.lock': 'y\n' });
  t.equal((await detectLockfile(noNpm))?.manager, 'pnpm');
});

t.test('line endings do not change the key; content does', async (t) => {
  const lf = await treeFrom(t, { '.svc/package-lock.json': '{\n  "a": 1\n}\n' });
  const crlf = await treeFrom(t, { '.svc/package-lock.json': '{\r\n  "a": 1\r\n}\r\n' });
  const other = await treeFrom(t, { '.svc/package-lock.json': '{\n  "a": 2\n}\n' });
  t.equal(await lockfileHash(crlf), await lockfileHash(lf));
  t.not(await lockfileHash(other), await lockfileHash(lf));
});

t.test('custom svcDir and bad input', async (t) => {
  const root = await treeFrom(t, { 'ci/package-lock.json': 'n\n' });
  t.equal(await lockfileHash(root, { svcDir: 'ci' }), `npm:${sha('n\n')}`);
  await t.rejects(lockfileHash(root, { svcDir: '../elsewhere' }), { code: 'SVC_ERR_COMPILE_PATH_OUTSIDE_REPO' });
  const dir = await treeFrom(t, { '.svc/x': '' });
  await mkdir(path.join(dir, '.svc/package-lock.json'));
  await t.rejects(lockfileHash(dir), { code: 'SVC_ERR_COMPILE_READ_FAILED', message: /package-lock\.json/ });
});
