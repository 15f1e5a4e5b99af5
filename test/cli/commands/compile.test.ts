// `svc compile` and `svc run local` in-process (runSvc → runCli): exit codes, stderr lines, --json.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runSvc, SEVERAL_WORKFLOWS, tempRepo, workflowFile, writeFiles } from '../../fixtures/workflow-trees/index.ts';

const LOCK = '.svc/svc.lock.json';
t.test('compile writes the lock; --check is 0 when fresh and 1 when stale; --json', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const first = await runSvc(dir, ['compile']);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /compiled 5 workflows: \.svc\/svc\.lock\.json written/);
  const text = readFileSync(path.join(dir, LOCK), 'utf8');

  const again = await runSvc(dir, ['compile', '--json']);
  t.equal(again.code, 0);
  const out = JSON.parse(again.stdout) as Record<string, unknown>;
  t.equal(out['changed'], false);
  t.equal(out['written'], false);
  t.same(Object.keys(out['contentHashes'] as object), ['ci', 'deploy', 'docs', 'nightly', 'review-gate']);
  t.same(out['warnings'], []);
  t.equal(readFileSync(path.join(dir, LOCK), 'utf8'), text, 'byte-identical');

  const fresh = await runSvc(dir, ['compile', '--check']);
  t.equal(fresh.code, 0, fresh.stderr);
  t.match(fresh.stdout, /is up to date \(5 workflows\)/);

  writeFiles(dir, { '.svc/workflows/docs.ts': workflowFile('docs', "push({ paths: ['site/**'] })") });
  const stale = await runSvc(dir, ['compile', '--check']);
  t.equal(stale.code, 1);
  t.match(stale.stderr, /\.svc\/svc\.lock\.json is out of date \(changed: .*docs.*\): run `svc compile`/);
  t.equal(readFileSync(path.join(dir, LOCK), 'utf8'), text, '--check writes nothing');

  const staleJson = await runSvc(dir, ['compile', '--check', '--json']);
  t.equal(staleJson.code, 1);
  const check = (JSON.parse(staleJson.stdout) as { check: { upToDate: boolean; changed: string[] } }).check;
  t.equal(check.upToDate, false);
  t.ok(check.changed.includes('docs'));

  const verbose = await runSvc(dir, ['compile', '--verbose']);
  t.equal(verbose.code, 0);
  t.match(verbose.stdout, /updated/);
  t.match(verbose.stdout, /^docs {2}[0-9a-f]{12} {2}\.svc\/workflows\/docs\.ts#default/m);
  t.match(verbose.stdout, /^ {2}\.svc\/workflows\/docs\.ts$/m);
});

t.test('--fail-on-drift: a usage error without --check; byte-level with it', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const usage = await runSvc(dir, ['compile', '--fail-on-drift']);
  t.equal(usage.code, 2);
  t.match(usage.stderr, /SVC_ERR_CLI_USAGE: --fail-on-drift requires --check/);
  t.throws(() => statSync(path.join(dir, LOCK)), 'a usage error compiles nothing');

  t.equal((await runSvc(dir, ['compile'])).code, 0);
  const lock = readFileSync(path.join(dir, LOCK), 'utf8');
  writeFiles(dir, { [LOCK]: JSON.stringify(JSON.parse(lock)) });
  t.equal((await runSvc(dir, ['compile', '--check'])).code, 0, 'reformatted lock: same content');
  const strict = await runSvc(dir, ['compile', '--check', '--fail-on-drift']);
  t.equal(strict.code, 1);
  t.match(strict.stderr, /same content but different formatting/);
});

t.test('compile errors exit 1 with one line naming the file', async (t) => {
  const cases: Record<string, { source: string; pattern: RegExp }> = {
    'duplicate job': {
      source: "import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('d', { on: push(), jobs: [job({ name: 'a', runsOn: 'linux', steps: [] }), job({ name: 'a', runsOn: 'linux', steps: [] })] });\n",
      pattern: /^SVC_ERR_COMPILE_DUPLICATE_JOB: \.svc\/workflows\/bad\.ts/,
    },
    'cyclic needs': {
      source: workflowFile('c', 'push()', "a: job({ runsOn: 'linux', needs: ['b'], steps: [] }),\n    b: job({ runsOn: 'linux', needs: ['a'], steps: [] }),"),
      pattern: /^SVC_ERR_COMPILE_NEEDS_CYCLE: \.svc\/workflows\/bad\.ts/,
    },
    'bad cron': { source: workflowFile('c', "schedule('61 * * * *')"), pattern: /^SVC_ERR_COMPILE_INVALID_CRON: \.svc\/workflows\/bad\.ts/ },
  };
  for (const [name, c] of Object.entries(cases)) {
    const dir = tempRepo(t, { '.svc/workflows/bad.ts': c.source });
    const result = await runSvc(dir, ['compile']);
    t.equal(result.code, 1, name);
    t.match(result.stderr, c.pattern, name);
    t.equal(result.stderr.trim().split('\n').length, 1, `${name}: one line`);
    t.throws(() => statSync(path.join(dir, LOCK)), `${name}: no lock written`);
    const json = await runSvc(dir, ['compile', '--json']);
    t.equal(json.code, 1);
    t.match(JSON.parse(json.stdout), { error: { code: /^SVC_ERR_COMPILE_/ } });
  }
});

t.test('compile from a subdirectory finds .svc/ above; outside any project it says run svc init', async (t) => {
  const dir = tempRepo(t, { ...SEVERAL_WORKFLOWS, 'src/deep/x.ts': 'export {};\n' });
  const sub = await runSvc(path.join(dir, 'src', 'deep'), ['compile']);
  t.equal(sub.code, 0, sub.stderr);
  t.ok(statSync(path.join(dir, LOCK)).isFile());
  const none = tempRepo(t, { 'README.md': 'x\n' });
  const result = await runSvc(none, ['compile']);
  t.equal(result.code, 1);
  t.match(result.stderr, /SVC_ERR_COMPILE_SVC_DIR_MISSING: .*run `svc init`/);
});

t.test('svc run local is retired (usage error, exit 2)', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const result = await runSvc(dir, ['run', 'local']);
  t.equal(result.code, 2);
  t.match(result.stderr, /`svc run local` is retired: use `svc run <event> --local`/);
  const bare = await runSvc(dir, ['run']);
  t.equal(bare.code, 2);
  const unknownFlag = await runSvc(dir, ['compile', '--nope']);
  t.equal(unknownFlag.code, 2, 'oclif parse errors are usage errors too');
});
