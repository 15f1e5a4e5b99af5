// The suite's own runner (scripts/test-runner/run-files.ts) on real tap scripts in real Node
// processes: a passing file, a failing one (its output follows its line), one without tap's
// closing count, one killed by a signal, one tap cannot end (a busy loop: the hang guard stops its process group),
// and the order and numbering of the lines when files run two at a time.
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runFiles } from '../../scripts/test-runner/run-files.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-run-files-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const files: Record<string, string> = {
  'pass.test.ts': "import t from 'tap';\nt.ok(true, 'one');\nt.equal(1, 1, 'two');\n",
  'fail.test.ts': "import t from 'tap';\nt.ok(true, 'fine');\nt.equal(1, 2, 'the failing assertion');\n",
  'plain.test.ts': "console.log('no tap here');\n",
  'killed.test.ts': "import t from 'tap';\nt.ok(true);\nprocess.kill(process.pid, 'SIGKILL');\n",
  'busy.test.ts': "import t from 'tap';\nt.ok(true, 'started');\nwhile (true) {}\n",
};
for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);

// tap resolves from the repository's node_modules, as for the suite's own files.
await symlink(join(import.meta.dirname, '..', '..', 'node_modules'), join(dir, 'node_modules'), 'dir');
const env = { ...process.env };

t.test('each file gets one line with its counts; a failure is followed by its output', async (t) => {
  const out: string[] = [];
  const results = await runFiles({ root: dir, files: ['pass.test.ts', 'fail.test.ts'], jobs: 2, timeout: 60, env, imports: [], write: (s) => out.push(s), tag: 'probe' });
  const text = out.join('');
  const pass = results.find((r) => r.file === 'pass.test.ts');
  const fail = results.find((r) => r.file === 'fail.test.ts');
  t.match(pass, { ok: true, counts: { total: 2, pass: 2 } });
  t.notOk(pass?.output, 'a passing file keeps its output to itself');
  t.match(fail, { ok: false, counts: { total: 2, pass: 1, fail: 1 } });
  t.notOk(fail?.reason, 'its assertions say why: no extra reason');
  t.match(text, /^TAP version 14\n1\.\.2\n/);
  t.match(text, /^ok \d - pass\.test\.ts # time=\d+ms \(total 2, pass 2\) \[probe\]$/m);
  t.match(text, /^not ok \d - fail\.test\.ts # time=\d+ms \(total 2, pass 1, fail 1\) \[probe\]\n {4}/m, 'the failed file\'s output follows its line, indented');
  t.match(text, /^ {4}.*not ok \d+ - the failing assertion$/m);
  t.same(text.match(/^(?:not )?ok (\d) /gm)?.map((l) => l.trim()).map((l) => l.split(' ').at(-1)), ['1', '2'], 'lines numbered in the order the files ended');
});

t.test('a file without tap\'s closing count, or ended by a signal, fails and says why', async (t) => {
  const results = await runFiles({ root: dir, files: ['plain.test.ts', 'killed.test.ts'], jobs: 1, timeout: 60, env, imports: [], write: () => undefined });
  t.match(results[0], { file: 'plain.test.ts', ok: false, reason: /without tap's closing count/ });
  t.match(results[1], { file: 'killed.test.ts', ok: false, reason: 'ended by SIGKILL' });
});

t.test('a file tap cannot end is stopped by the hang guard, with its reason', async (t) => {
  const out: string[] = [];
  const [busy] = await runFiles({ root: dir, files: ['busy.test.ts'], jobs: 1, timeout: 1, guardMarginSeconds: 1, env, imports: [], write: (s) => out.push(s) });
  t.match(busy, { ok: false, reason: /still running after 2 s \(the hang guard\): stopped/ });
  t.match(out.join(''), /^not ok 1 - busy\.test\.ts .*the hang guard/m);
});
