// svc tests svc (issue 41): this repository's own `.svc/workflows/` compile with `svc compile`
// (the committed lock is current: --fail-on-drift), and `svc run push --local --job hygiene` runs
// that cheap job of svc's CI to green on this machine through the real local run (in-process CLI,
// real git checkout of HEAD, real step runner). An unknown --job is a usage error. `--branch main`:
// the push trigger's branch whatever this checkout's branch is, and in a copy without .git (this
// suite run as svc's own CI job).
import { join } from 'node:path';
import t from 'tap';
import { runCli } from '../fixtures/cli.ts';
import { REPO_ROOT } from '../fixtures/programs.ts';

const SVC = join(REPO_ROOT, 'bin/svc.ts');

t.test("this repository's workflows compile and the lock is current", async (t) => {
  const compiled = await runCli(SVC, ['compile', '--check', '--fail-on-drift'], { cwd: REPO_ROOT });
  t.equal(compiled.code, 0, `${compiled.stdout}\n${compiled.stderr}`);
});

t.test('svc run push --local --job hygiene goes green', async (t) => {
  const result = await runCli(SVC, ['run', 'push', '--local', '--branch', 'main', '--job', 'hygiene'], { cwd: REPO_ROOT });
  t.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  t.match(result.stdout, /workflow svc \(via push\(branches: main\)\): hygiene\n/, 'only the named job (it needs nothing)');
  t.match(result.stdout, '[hygiene] check | migration numbers unique; every file test/tiers.ts names exists');
  t.match(result.stdout, /summary: completed\n {2}svc: completed\n {4}completed {2}hygiene /);

  const unknown = await runCli(SVC, ['run', 'push', '--local', '--branch', 'main', '--job', 'nope'], { cwd: REPO_ROOT });
  t.equal(unknown.code, 2, 'a usage error');
  t.match(unknown.stderr, /--job "nope": no matched workflow has such a job \(jobs: build, hygiene, integration, system, typecheck, unit\)/);
});
