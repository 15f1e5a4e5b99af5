// In-process tests of `compileWorkflows`: real temp directories, real imports of workflow files
// through the `svc/sdk` resolution hook, real hashing. Child-process exit codes are covered in
// test/cli/commands/compile.test.ts.
import { readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { breakingVersionNotice, compareLocks, compileWorkflows, describeDrift } from '../../../cli/compiler/compile.ts';
import { buildLock, parseLock, serializeLock } from '../../../workflow/lock/lock-file.ts';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import { job, push, step, workflow } from '../../../sdk/index.ts';
import { LOCK_SCHEMA_VERSION } from '../../../schemas/lock.ts';
import { SEVERAL_WORKFLOWS, tempRepo, workflowFile, writeFiles } from '../../fixtures/workflow-trees/index.ts';

const LOCK = '.svc/svc.lock.json';

t.test('compiles every workflow into a valid lock, byte-identical across runs', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const first = await compileWorkflows({ repoRoot: dir });
  t.equal(first.written, true);
  t.equal(first.drift.missing, true);
  const text = readFileSync(path.join(dir, LOCK), 'utf8');
  t.equal(text, first.text);
  const lock = parseLock(text);
  t.equal(lock.schemaVersion, LOCK_SCHEMA_VERSION);
  t.equal(lock.source, '.svc/workflows/*.ts#default');
  t.same(lock.workflows.map((w) => w.name), ['ci', 'deploy', 'docs', 'nightly', 'review-gate']);
  t.same(lock.workflows.find((w) => w.name === 'ci')?.jobs.map((j) => j.name), ['lint', 'test']);
  t.same(first.workflows.find((w) => w.name === 'ci')?.jobs, ['lint', 'test']);
  // every workflow of one tree shares the tree hash
  t.equal(new Set(lock.workflows.map((w) => w.contentHash)).size, 1);
  t.ok(first.workflows[0]!.files.includes('.svc/workflows/ci.ts'));

  const mtime = statSync(path.join(dir, LOCK)).mtimeMs;
  const second = await compileWorkflows({ repoRoot: dir });
  t.equal(second.text, text, 'second compile is byte-identical');
  t.equal(second.changed, false);
  t.equal(second.written, false);
  t.equal(second.drift.upToDate, true);
  t.equal(statSync(path.join(dir, LOCK)).mtimeMs, mtime, 'an unchanged lock is not rewritten');
  t.same(readdirSync(path.join(dir, '.svc')).filter((n) => n.endsWith('.tmp')), [], 'no temp file left');
});

t.test('check and memory modes write nothing; drift names the workflows that differ', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const dry = await compileWorkflows({ repoRoot: dir, mode: 'check' });
  t.equal(dry.written, false);
  t.throws(() => statSync(path.join(dir, LOCK)), 'check writes no lock');
  t.equal(describeDrift(dry.drift, LOCK), `${LOCK} does not exist`);

  await compileWorkflows({ repoRoot: dir });
  t.equal((await compileWorkflows({ repoRoot: dir, mode: 'check' })).drift.upToDate, true);

  // Any change under .svc/ changes every workflow's content hash (one tree digest);
  // a trigger change also changes that workflow's triggers.
  writeFiles(dir, { '.svc/workflows/docs.ts': workflowFile('docs', "push({ paths: ['docs/**', 'site/**'] })") });
  const stale = await compileWorkflows({ repoRoot: dir, mode: 'memory' });
  t.equal(stale.drift.upToDate, false);
  t.same(stale.drift.changed, ['ci', 'deploy', 'docs', 'nightly', 'review-gate']);
  t.match(describeDrift(stale.drift, LOCK), /out of date \(changed: ci, deploy, docs, nightly, review-gate\)/);

  // a removed and an added workflow
  await compileWorkflows({ repoRoot: dir });
  const { rmSync } = await import('node:fs');
  rmSync(path.join(dir, '.svc/workflows/nightly.ts'));
  writeFiles(dir, { '.svc/workflows/extra.ts': workflowFile('extra', 'push()') });
  const moved = await compileWorkflows({ repoRoot: dir, mode: 'check' });
  t.same(moved.drift.added, ['extra']);
  t.same(moved.drift.removed, ['nightly']);
  t.match(describeDrift(moved.drift, LOCK), /not in the lock: extra; no longer defined: nightly/);
});

t.test('an edit to a file excluded by .svcignore leaves the lock fresh', async (t) => {
  const dir = tempRepo(t, { ...SEVERAL_WORKFLOWS, '.svc/notes/todo.md': 'first\n', '.svc/types/x.d.ts': 'export {};\n' });
  await compileWorkflows({ repoRoot: dir });
  writeFiles(dir, { '.svc/notes/todo.md': 'second\n', '.svc/types/x.d.ts': 'export const y: 1;\n', 'src/app.ts': 'export const app = 2;\n' });
  const again = await compileWorkflows({ repoRoot: dir, mode: 'check' });
  t.equal(again.drift.upToDate, true);
  t.equal(again.drift.identical, true);
  // while a covered file does make it stale
  writeFiles(dir, { '.svc/README.md': 'covered\n' });
  t.equal((await compileWorkflows({ repoRoot: dir, mode: 'check' })).drift.upToDate, false);
});

t.test('a formatting-only difference is up to date but not identical', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const first = await compileWorkflows({ repoRoot: dir });
  writeFileSync(path.join(dir, LOCK), JSON.stringify(JSON.parse(first.text)));
  const check = await compileWorkflows({ repoRoot: dir, mode: 'check' });
  t.equal(check.drift.upToDate, true);
  t.equal(check.drift.identical, false);
  t.match(describeDrift(check.drift, LOCK), /same content but different formatting/);
  writeFileSync(path.join(dir, LOCK), '{ not json');
  const broken = await compileWorkflows({ repoRoot: dir, mode: 'check' });
  t.equal(broken.drift.upToDate, false);
  t.match(describeDrift(broken.drift, LOCK), /not a readable lock/);
});

const BAD: Record<string, { source: string; code: string; where: RegExp }> = {
  'duplicate job': {
    source: workflowFile('dup', 'push()', '', 'job, push, step, workflow').replace(
      'jobs: {\n    \n  }',
      "jobs: [job({ name: 'a', runsOn: 'linux', steps: [step('s', async () => {})] }), job({ name: 'a', runsOn: 'linux', steps: [step('s', async () => {})] })]",
    ),
    code: 'SVC_ERR_COMPILE_DUPLICATE_JOB',
    where: /\.svc\/workflows\/bad\.ts/,
  },
  'cyclic needs': {
    source: workflowFile('cyc', 'push()', "a: job({ runsOn: 'linux', needs: ['b'], steps: [] }),\n    b: job({ runsOn: 'linux', needs: ['a'], steps: [] }),"),
    code: 'SVC_ERR_COMPILE_NEEDS_CYCLE',
    where: /\.svc\/workflows\/bad\.ts.*jobs/,
  },
  'bad cron': {
    source: workflowFile('cron', "schedule('every day at noon')"),
    code: 'SVC_ERR_COMPILE_INVALID_CRON',
    where: /\.svc\/workflows\/bad\.ts.* at on/,
  },
  'schedule on another branch (not run by this version)': {
    source: workflowFile('cron', "schedule('0 3 * * *', { branch: 'release' })"),
    code: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE',
    where: /\.svc\/workflows\/bad\.ts \(workflow "cron"\) at on\[0\]: .*schedule\(\.\.\., \{ branch: 'release' \}\) — schedules run the workflow registered from the default branch/,
  },
  'lifecycle event this version never emits': {
    source: workflowFile('life', "lifecycle({ events: ['repository.created'] })", undefined, 'job, lifecycle, step, workflow'),
    code: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE',
    where: /at on\[0\]: .*lifecycle\(\{ events: \['repository\.created'\] \}\) — this version emits only registration\.updated/,
  },
  'approval by a role that is not an org role': {
    source: workflowFile('gate', 'push()', "a: job({ runsOn: 'linux', approval: { clauses: [{ teams: ['ops'], roles: ['admin', 'ops'] }] }, steps: [step('s', async () => {})] }),"),
    code: 'SVC_ERR_COMPILE_INVALID_APPROVAL',
    where: /at jobs\.a\.options\.approval\.clauses\[0\]\.roles: "ops" is not a role; the roles are viewer, developer, approver, admin/,
  },
  'step-level approval by a role that is not an org role': {
    source: workflowFile('gate', 'push()', "a: job({ runsOn: 'linux', steps: [step('s', async () => {}, { approval: { clauses: [{ roles: ['release-managers'] }] } })] }),"),
    code: 'SVC_ERR_COMPILE_INVALID_APPROVAL',
    where: /at jobs\.a\.steps\S*\.approval\.clauses\[0\]\.roles: "release-managers" is not a role; the roles are viewer, developer, approver, admin/,
  },
  'container option svc never honours': {
    source: workflowFile('box', 'push()', "a: job({ runsOn: 'linux', container: { image: 'node:24', options: ['--memory=1g', '--privileged'] }, steps: [step('s', async () => {})] }),"),
    code: 'SVC_ERR_COMPILE_UNHONOURED_FEATURE',
    where: /at jobs\.a\.container\.options\[1\]: .*container option --privileged — it would give the job access to the agent host/,
  },
  'container option with a bad value': {
    source: workflowFile('box', 'push()', "a: job({ runsOn: 'linux', container: { image: 'node:24', options: ['--cpus', 'lots'] }, steps: [step('s', async () => {})] }),"),
    code: 'SVC_ERR_COMPILE_INVALID_VALUE',
    where: /at jobs\.a\.options\.container\.options\[0\]: --cpus: "lots" is not a positive number of CPUs/,
  },
  'syntax error': { source: "import { workflow } from 'svc/sdk';\nconst x = ;\n", code: 'SVC_ERR_COMPILE_IMPORT_FAILED', where: /^\.svc\/workflows\/bad\.ts:2:11: syntax error/ },
  'throw at import': {
    source: "import { workflow } from 'svc/sdk';\nthrow new Error('no config\\nsecond line');\n",
    code: 'SVC_ERR_COMPILE_IMPORT_FAILED',
    where: /^\.svc\/workflows\/bad\.ts:2:7: failed to load: no config$/,
  },
  'missing module': { source: "import { x } from './nope.ts';\nexport default x;\n", code: 'SVC_ERR_COMPILE_IMPORT_FAILED', where: /^\.svc\/workflows\/bad\.ts: failed to load: .*nope\.ts/ },
  'no default export': { source: "export const a = 1;\n", code: 'SVC_ERR_COMPILE_NO_DEFAULT_EXPORT', where: /^\.svc\/workflows\/bad\.ts: has no default export/ },
  'not a workflow': { source: 'export default { name: "x" };\n', code: 'SVC_ERR_COMPILE_NOT_A_WORKFLOW', where: /^\.svc\/workflows\/bad\.ts: the default export is object, not a workflow/ },
  'enum (not erasable)': { source: 'enum E { A }\nexport default E;\n', code: 'SVC_ERR_COMPILE_IMPORT_FAILED', where: /bad\.ts:1:1: syntax error: TypeScript enum/ },
};

for (const [name, bad] of Object.entries(BAD)) {
  t.test(`compile error: ${name} names the file and changes nothing`, async (t) => {
    const dir = tempRepo(t, SEVERAL_WORKFLOWS);
    const good = await compileWorkflows({ repoRoot: dir });
    writeFiles(dir, { '.svc/workflows/bad.ts': bad.source });
    const error = await compileWorkflows({ repoRoot: dir }).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    t.ok(error, 'compile fails');
    t.equal(error?.code, bad.code);
    t.match(error?.message, bad.where);
    t.equal(readFileSync(path.join(dir, LOCK), 'utf8'), good.text, 'the lock is untouched');
  });
}

t.test('a duplicate workflow name across files is refused', async (t) => {
  const dir = tempRepo(t, { '.svc/workflows/a.ts': workflowFile('same', 'push()'), '.svc/workflows/b.ts': workflowFile('same', 'pr()') });
  await t.rejects(compileWorkflows({ repoRoot: dir }), { code: 'SVC_ERR_COMPILE_DUPLICATE_WORKFLOW', message: /\.svc\/workflows\/a\.ts.*\.svc\/workflows\/b\.ts/ });
});

t.test('no .svc directory, and an empty workflows directory', async (t) => {
  const bare = tempRepo(t, { 'README.md': 'x\n' });
  await t.rejects(compileWorkflows({ repoRoot: bare }), { code: 'SVC_ERR_COMPILE_SVC_DIR_MISSING', message: /run `svc init`/ });
  const empty = tempRepo(t, { '.svc/.svcignore': 'node_modules/\n' });
  const result = await compileWorkflows({ repoRoot: empty });
  t.same(result.lock.workflows, []);
  t.match(result.notes.join('\n'), /no workflow files/);
});

t.test('MJS mode: by package.json, or when only .mjs files exist', async (t) => {
  const mjs = "import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('m', { on: push(), jobs: { a: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });\n";
  const only = tempRepo(t, { '.svc/workflows/m.mjs': mjs });
  const a = await compileWorkflows({ repoRoot: only });
  t.equal(a.workflowMode, 'mjs');
  t.equal(a.lock.source, '.svc/workflows/*.mjs#default');
  t.same(a.lock.workflows.map((w) => w.source), ['.svc/workflows/m.mjs#default']);

  const both = tempRepo(t, { '.svc/workflows/m.mjs': mjs, '.svc/workflows/t.ts': workflowFile('t', 'push()') });
  const b = await compileWorkflows({ repoRoot: both });
  t.equal(b.workflowMode, 'ts');
  t.same(b.lock.workflows.map((w) => w.name), ['t']);
  t.match(b.notes.join('\n'), /left out \.svc\/workflows\/m\.mjs/);

  writeFiles(both, { '.svc/package.json': JSON.stringify({ type: 'module', svc: { mode: 'mjs' } }) });
  const c = await compileWorkflows({ repoRoot: both });
  t.equal(c.workflowMode, 'mjs');
  t.same(c.lock.workflows.map((w) => w.name), ['m']);

  writeFiles(both, { '.svc/package.json': JSON.stringify({ svc: { mode: 'cjs' } }) });
  await t.rejects(compileWorkflows({ repoRoot: both }), { code: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID', message: /"svc.mode" must be "ts" or "mjs"/ });
  writeFiles(both, { '.svc/package.json': '{' });
  await t.rejects(compileWorkflows({ repoRoot: both }), { code: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID' });
});

t.test('an edited workflow is imported anew in the same process', async (t) => {
  const dir = tempRepo(t, { '.svc/workflows/a.ts': workflowFile('first-name', 'push()') });
  t.same((await compileWorkflows({ repoRoot: dir })).lock.workflows.map((w) => w.name), ['first-name']);
  writeFiles(dir, { '.svc/workflows/a.ts': workflowFile('second-name', 'push()') });
  t.same((await compileWorkflows({ repoRoot: dir })).lock.workflows.map((w) => w.name), ['second-name']);
});

t.test('a workflow with top-level await and one importing a local helper load too', async (t) => {
  const dir = tempRepo(t, {
    '.svc/workflows/tla.ts': "import { job, push, step, workflow } from 'svc/sdk';\nconst branches = await Promise.resolve(['main']);\nexport default workflow('tla', { on: push({ branches }), jobs: { a: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });\n",
    '.svc/workflows/helped.ts': "import { push, workflow } from 'svc/sdk';\nimport { jobs } from '../lib/jobs.ts';\nexport default workflow('helped', { on: push(), jobs });\n",
    '.svc/lib/jobs.ts': "import { job, step } from 'svc';\nexport const jobs = { b: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) };\n",
  });
  const result = await compileWorkflows({ repoRoot: dir });
  t.same(result.lock.workflows.map((w) => w.name), ['helped', 'tla']);
  t.same(result.lock.workflows.find((w) => w.name === 'tla')?.triggers[0], { type: 'push', branches: ['main'], paths: [], repositories: [], requires: [] });
});

t.test('hashFiles are validated, resolved and recorded', async (t) => {
  const dir = tempRepo(t, {
    '.svc/workflows/a.ts': "import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('a', { on: push(), hashFiles: ['src/**/*.ts', 'nothing/*.x'], jobs: { b: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });\n",
    'src/app.ts': 'export {};\n',
  });
  const result = await compileWorkflows({ repoRoot: dir });
  const entry = result.lock.workflows[0]!;
  t.same(entry.resolvedHashFiles, ['src/app.ts']);
  t.ok(result.workflows[0]!.files.includes('src/app.ts'));
  t.match(result.warnings.map((w) => w.code), ['hashfiles-no-match']);
  writeFiles(dir, { 'src/app.ts': 'export const changed = 1;\n' });
  t.not((await compileWorkflows({ repoRoot: dir, mode: 'check' })).lock.workflows[0]!.contentHash, entry.contentHash);

  writeFiles(dir, { '.svc/workflows/a.ts': "import { job, push, workflow } from 'svc/sdk';\nexport default workflow('a', { on: push(), hashFiles: ['../outside/*'], jobs: { b: job({ runsOn: 'linux', steps: [] }) } });\n" });
  await t.rejects(compileWorkflows({ repoRoot: dir }), { message: /\.svc\/workflows\/a\.ts.*hashFiles/ });
});

t.test('a symlink with an absolute target is hashed and warned about', async (t) => {
  const dir = tempRepo(t, { ...SEVERAL_WORKFLOWS, 'shared/config.json': '{}\n' });
  symlinkSync(path.join(dir, 'shared/config.json'), path.join(dir, '.svc/config.json'));
  const result = await compileWorkflows({ repoRoot: dir });
  t.match(result.warnings, [{ code: 'symlink-absolute-target', path: 'config.json' }]);
  t.equal(result.warnings.length, 1, 'deduplicated across workflows');
});

t.test('breaking version notice: only when minReaderVersion rises to a breaking version', async (t) => {
  // An org-wide workflow with approval raises minReaderVersion to 42 (an older orchestrator
  // would run it without the hold), with a notice against the previous lock.
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const plain = await compileWorkflows({ repoRoot: dir });
  t.equal(plain.lock.minReaderVersion, 38);
  t.equal(plain.notice, undefined, 'a first lock at the oldest breaking version needs no notice');
  const orgWide = workflow('org', { on: push({ repositories: ['acme/*'] }), approval: { clauses: [{ users: ['boss'] }] }, jobs: { a: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });
  const entry = workflowToLockEntry(orgWide, { sourcePath: '.svc/workflows/org.ts', exportName: 'default', contentHash: 'a'.repeat(64) });
  const raised = buildLock({ source: plain.lock.source, workflows: [...plain.lock.workflows, entry] });
  t.equal(raised.minReaderVersion, 42);
  t.match(breakingVersionNotice(plain.text, raised), /minReaderVersion 42, was 38.*organization-wide workflow declares approval.*upgrade/);
  t.equal(breakingVersionNotice(serializeLock(raised), raised), undefined, 'no notice once the previous lock is at that version');
  t.equal(breakingVersionNotice('{"workflows":[]}', raised)?.includes('minReaderVersion 42)'), true, 'a pre-window lock (no minReaderVersion) gets the notice');
  writeFiles(dir, { '.svc/workflows/org.ts': "import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('org', { on: push({ repositories: ['acme/*'] }), approval: { clauses: [{ users: ['boss'] }] }, jobs: { a: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });\n" });
  const compiled = await compileWorkflows({ repoRoot: dir });
  t.equal(compiled.lock.minReaderVersion, 42, 'svc compile writes the raised lock itself');
  t.match(compiled.notice ?? '', /minReaderVersion 42/);

  // Workflow- and job-level approval and concurrency compile: the runtime carries them out.
  writeFiles(dir, { '.svc/workflows/gate.ts': "import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('gate', { on: push(), concurrency: { group: 'deploy', cancelInProgress: true }, jobs: { a: job({ runsOn: 'linux', approval: { clauses: [{ users: ['boss'] }], when: 'fork' }, concurrency: { max: 2 }, steps: [step('s', async () => {})] }) } });\n" });
  const gate = (await compileWorkflows({ repoRoot: dir })).lock.workflows.find((w) => w.name === 'gate');
  t.same(gate?.concurrency, { hasGroup: true, cancelInProgress: true });
  t.same(gate?.jobs[0]?.concurrency, { hasGroup: false, cancelInProgress: false, max: 2 });
  t.same(gate?.jobs[0]?.approval, { clauses: [{ users: ['boss'], teams: [], roles: [], count: 1 }], when: 'fork' });

  // Teams and roles (issue 42): team('release', 2) is two approvals from team release.
  writeFiles(dir, { '.svc/workflows/gate.ts': "import { job, push, role, step, team, workflow } from 'svc/sdk';\nexport default workflow('gate', { on: push(), approval: { clauses: [team('release', 2), role('approver')] }, jobs: { a: job({ runsOn: 'linux', steps: [step('s', async () => {})] }) } });\n" });
  const teams = (await compileWorkflows({ repoRoot: dir })).lock.workflows.find((w) => w.name === 'gate');
  t.same(teams?.approval?.clauses, [
    { users: [], teams: [], roles: ['approver'], count: 1 },
    { users: [], teams: ['release'], roles: [], count: 2 },
  ]);
});

t.test('step-level approval compiles into the lock (the runner pauses before the step); org-wide it needs schema 42', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const stepGate = "step('deploy', async () => {}, { approval: { clauses: [{ users: ['boss'] }], reason: 'production', timeoutSeconds: 600, when: 'untrusted' } })";
  writeFiles(dir, { '.svc/workflows/stepgate.ts': `import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('stepgate', { on: push(), jobs: { a: job({ runsOn: 'linux', steps: [step('build', async () => {}), ${stepGate}] }) } });\n` });
  const lock = (await compileWorkflows({ repoRoot: dir })).lock;
  const steps = lock.workflows.find((w) => w.name === 'stepgate')?.jobs[0]?.steps;
  t.equal(steps?.[0]?.approval, undefined, 'step 1 is not held');
  t.same(steps?.[1]?.approval, { clauses: [{ users: ['boss'], teams: [], roles: [], count: 1 }], reason: 'production', timeoutSeconds: 600, when: 'untrusted' });
  t.equal(lock.minReaderVersion, 38, 'a repository workflow with a step hold needs no newer reader');
  // Organization-wide: an older orchestrator would run the step without its hold.
  writeFiles(dir, { '.svc/workflows/stepgate.ts': `import { job, push, step, workflow } from 'svc/sdk';\nexport default workflow('stepgate', { on: push({ repositories: ['acme/*'] }), jobs: { a: job({ runsOn: 'linux', steps: [${stepGate}] }) } });\n` });
  const orgWide = await compileWorkflows({ repoRoot: dir });
  t.equal(orgWide.lock.minReaderVersion, 42);
  t.match(orgWide.notice ?? '', /minReaderVersion 42/);
});

t.test('compareLocks on its own', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS);
  const { lock, text } = await compileWorkflows({ repoRoot: dir, mode: 'memory' });
  t.same(compareLocks(text, lock, text), { missing: false, identical: true, upToDate: true, added: [], removed: [], changed: [], fields: [] });
  const older = JSON.parse(text) as { schemaVersion: number; lockfileHash?: string };
  older.schemaVersion = 40;
  const drift = compareLocks(JSON.stringify(older), lock, text);
  t.same(drift.fields, ['schemaVersion']);
  t.match(describeDrift(drift, LOCK), /lock fields: schemaVersion/);
  t.match(compareLocks('[]', lock, text).unreadable, /workflows/);
});
