import t, { type Test } from 'tap';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluateRequirements, type ReadFile } from '../../../workflow/matching/requirements.ts';
import { matchLock } from '../../../workflow/matching/match-lock.ts';
import { pushPayload } from '../../fixtures/github-payloads.ts';
import { lockWith, trig } from '../../fixtures/locks.ts';
import { gh } from './helpers.ts';

/** A real directory read through the filesystem, standing in for "the tree at the event ref". */
async function tree(t: Test, files: Record<string, string>): Promise<{ read: ReadFile; reads: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-requires-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  const reads: string[] = [];
  const read: ReadFile = async (path) => {
    reads.push(path);
    try {
      return await readFile(join(dir, path), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  };
  return { read, reads };
}

t.test('file-exists, file-absent, file-contains', async (t) => {
  const { read } = await tree(t, { 'package.json': '{"workspaces": ["web"]}' });
  t.same(await evaluateRequirements([], read), { ok: true });
  t.same(await evaluateRequirements([{ type: 'file-exists', path: 'package.json' }], read), { ok: true });
  t.same(await evaluateRequirements([{ type: 'file-exists', path: 'Cargo.toml' }], read), {
    ok: false,
    reason: 'requirement not met: file "Cargo.toml" must exist, but it does not',
  });
  t.same(await evaluateRequirements([{ type: 'file-absent', path: 'Cargo.toml' }], read), { ok: true });
  t.same(await evaluateRequirements([{ type: 'file-absent', path: 'package.json' }], read), {
    ok: false,
    reason: 'requirement not met: file "package.json" must be absent, but it exists',
  });
  t.same(await evaluateRequirements([{ type: 'file-contains', path: 'package.json', text: 'workspaces' }], read), { ok: true });
  t.same(await evaluateRequirements([{ type: 'file-contains', path: 'package.json', text: 'pnpm' }], read), {
    ok: false,
    reason: 'requirement not met: file "package.json" must contain "pnpm", but it does not',
  });
  t.same(await evaluateRequirements([{ type: 'file-contains', path: 'missing.txt', text: 'x' }], read), {
    ok: false,
    reason: 'requirement not met: file "missing.txt" must contain "x", but the file does not exist',
  });
});

t.test('stops at the first unmet requirement and reads each path once', async (t) => {
  const { read, reads } = await tree(t, { 'a.txt': 'alpha' });
  const result = await evaluateRequirements(
    [
      { type: 'file-exists', path: 'a.txt' },
      { type: 'file-contains', path: 'a.txt', text: 'alp' },
      { type: 'file-exists', path: 'b.txt' },
      { type: 'file-exists', path: 'c.txt' },
    ],
    read,
  );
  t.equal(result.ok, false);
  t.same(reads, ['a.txt', 'b.txt']);
});

t.test('a read error means the requirement cannot be evaluated', async (t) => {
  const failing: ReadFile = async () => {
    throw new Error('git cat-file failed: bad object');
  };
  t.same(await evaluateRequirements([{ type: 'file-absent', path: 'x' }], failing), {
    ok: false,
    reason: 'requirement "file "x" must be absent" cannot be evaluated: git cat-file failed: bad object',
  });
  // A directory is not a file: the real read error surfaces.
  const dirTree = await tree(t, {});
  const { read } = dirTree;
  const r = await evaluateRequirements([{ type: 'file-exists', path: '.' }], read);
  t.equal(r.ok, false);
  t.match(!r.ok && r.reason, /cannot be evaluated: EISDIR/);
  // A reader returning something that is not text is refused, not trusted.
  const wrong = (async () => 42) as unknown as ReadFile;
  t.match(await evaluateRequirements([{ type: 'file-exists', path: 'x' }], wrong), { ok: false, reason: /returned no text/ });
});

t.test('requires travel on the match and are evaluated afterwards', async (t) => {
  const lock = lockWith('node', trig.push({ requires: [{ type: 'file-exists', path: 'package.json' }, { type: 'file-absent', path: '.svc/skip' }] }));
  const [match] = matchLock(gh('push', pushPayload()), lock).matched;
  t.ok(match);
  const { read } = await tree(t, { 'package.json': '{}' });
  t.same(await evaluateRequirements(match!.requires, read), { ok: true });
  // Returned requirements are a copy: the lock stays untouched.
  match!.requires.pop();
  t.equal((lock.workflows[0]!.triggers[0] as { requires: unknown[] }).requires.length, 2);
});
