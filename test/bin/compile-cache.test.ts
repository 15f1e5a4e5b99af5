// Where the bins keep Node's module compile cache (bin/compile-cache.ts, docs/cli.md): a directory
// of the user's own, never one another user could have made or could write, and the shipped
// `svc` really writes its cache there (a real child process with its own HOME).
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { compileCacheDir } from '../../bin/compile-cache.ts';

const run = promisify(execFile);
const uid = process.getuid!();

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-compile-cache-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('XDG_CACHE_HOME, else ~/.cache: made for this user only', async (t) => {
  const root = scratch(t);
  const xdg = compileCacheDir({ XDG_CACHE_HOME: join(root, 'xdg'), HOME: join(root, 'home') }, join(root, 'tmp'), uid);
  t.equal(xdg, join(root, 'xdg', 'svc', 'compile-cache'));
  t.equal(statSync(xdg!).mode & 0o777, 0o700, 'nobody else may read or write it');
  t.equal(compileCacheDir({ HOME: join(root, 'home') }, join(root, 'tmp'), uid), join(root, 'home', '.cache', 'svc', 'compile-cache'));
  t.equal(compileCacheDir({ HOME: 'relative/home' }, join(root, 'tmp'), uid), join(root, 'tmp', `svc-compile-cache-${uid}`), 'a relative HOME is not used');
});

t.test('a directory another user could write, a link or a file is passed over', async (t) => {
  const root = scratch(t);
  const tmp = join(root, 'tmp');
  mkdirSync(join(root, 'open', 'svc', 'compile-cache'), { recursive: true });
  chmodSync(join(root, 'open', 'svc', 'compile-cache'), 0o777);
  t.equal(compileCacheDir({ XDG_CACHE_HOME: join(root, 'open') }, tmp, uid), join(tmp, `svc-compile-cache-${uid}`), 'world-writable: the temp dir candidate instead');
  mkdirSync(join(root, 'elsewhere'));
  mkdirSync(join(root, 'linked', 'svc'), { recursive: true });
  symlinkSync(join(root, 'elsewhere'), join(root, 'linked', 'svc', 'compile-cache'));
  t.equal(compileCacheDir({ XDG_CACHE_HOME: join(root, 'linked') }, tmp, uid), join(tmp, `svc-compile-cache-${uid}`), 'a link: passed over');
  // Both candidates unsafe: no cache at all rather than a shared one.
  const tmp2 = join(root, 'tmp2');
  mkdirSync(tmp2);
  symlinkSync(join(root, 'elsewhere'), join(tmp2, `svc-compile-cache-${uid}`));
  t.equal(compileCacheDir({ XDG_CACHE_HOME: join(root, 'linked') }, tmp2, uid), undefined, 'nothing safe: uncached');
  t.same(readdirSync(join(root, 'elsewhere')), [], 'nothing was written through a link');
});

t.test("another user's directory is passed over", { skip: uid !== 0 && 'needs root to make a directory owned by someone else' }, async (t) => {
  const root = scratch(t);
  const theirs = join(root, 'theirs', 'svc', 'compile-cache');
  mkdirSync(theirs, { recursive: true, mode: 0o700 });
  chownSync(theirs, 65534, 65534);
  t.equal(compileCacheDir({ XDG_CACHE_HOME: join(root, 'theirs') }, join(root, 'tmp'), uid), join(root, 'tmp', `svc-compile-cache-${uid}`));
});

t.test('the shipped svc writes its compile cache into the user directory', async (t) => {
  const root = scratch(t);
  const bin = fileURLToPath(new URL(process.env['SVC_TEST_DIST'] === '1' ? '../../dist/bin/svc.js' : '../../bin/svc.ts', import.meta.url));
  const env = { ...process.env, HOME: join(root, 'home'), TMPDIR: join(root, 'tmp') } as NodeJS.ProcessEnv;
  delete env['XDG_CACHE_HOME'];
  delete env['NODE_COMPILE_CACHE'];
  delete env['NODE_DISABLE_COMPILE_CACHE'];
  mkdirSync(join(root, 'tmp'));
  const { stdout } = await run(process.execPath, [bin, '--help'], { env, timeout: 120_000 });
  t.match(stdout, /compile/, 'svc --help ran');
  const dir = join(root, 'home', '.cache', 'svc', 'compile-cache');
  t.ok(readdirSync(dir).length > 0, `cache entries in ${dir}`);
  t.same(readdirSync(join(root, 'tmp')), [], 'nothing in the shared temp dir');
});
