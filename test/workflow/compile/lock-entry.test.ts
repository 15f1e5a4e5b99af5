import t from 'tap';
import { LockWorkflow } from '../../../schemas/lock.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import * as svc from '../../../sdk/index.ts';
import {
  comment,
  create,
  dispatch,
  dynamicJobs,
  event,
  fork,
  job,
  jobComplete,
  lifecycle,
  pr,
  push,
  release,
  resolveDefinitionRef,
  review,
  review_comment,
  rule,
  schedule,
  skip,
  star,
  status,
  step,
  tag,
  Type,
  watch,
  webhook,
  workflow,
  workflow_run,
  workflowComplete,
  workflows_failed_batch,
} from '../../../sdk/index.ts';

const HASH = 'a'.repeat(64);
const opts = { sourcePath: '.svc/workflows/ci.ts', exportName: 'default', contentHash: HASH };
const check = compileSchema(LockWorkflow);
const noop = async (): Promise<void> => {};

function richWorkflow() {
  const build = job({
    runsOn: ['linux', 'kici:arch:x64', '!spot'],
    matrix: { node: [22, 24], os: ['linux', 'mac'] },
    contexts: ['npm'],
    context: 'build',
    concurrency: { group: 'build', cancelInProgress: true, max: 2 },
    container: { image: 'node:24', options: ['--cpus', '2'] },
    checkout: { depth: 0, submodules: true },
    gracePeriod: 30,
    timeout: 600_000,
    routing: { prefer: ['fast*'], avoid: ['slow'] },
    rules: [rule('not docs', () => true), skip('draft', () => false)],
    approval: { clauses: [{ teams: ['release'], users: ['bob', 'alice', 'bob'] }], when: 'fork' },
    outputs: async () => ({ version: '1' }),
    onCancel: noop,
    cleanup: { run: noop, timeout: 1000 },
    onSuccess: noop,
    onFailure: noop,
    beforeStep: noop,
    afterStep: noop,
    steps: (s) =>
      s
        .step('version', async () => ({ version: '1' }), {
          outputs: Type.Object({ version: Type.String() }),
          check: async () => ({ drift: false }),
          whenInSync: async () => ({ version: '1' }),
          rules: [rule('always', () => true)],
          onCancel: noop,
          cleanup: noop,
          approval: { clauses: [{ roles: ['approver'] }], reason: 'publishes', timeoutSeconds: 600 },
          timeout: 5000,
        })
        .step('test', async (ctx) => {
          void ctx.outputsOf('version').version;
        }),
  });
  return workflow('CI build', {
    on: [
      schedule('0 3 * * *', { timezone: 'Europe/Paris' }),
      pr({ actions: ['synchronize', 'opened'], branches: ['main', 'release/*'], paths: ['src/**', '!src/**/*.md'], commitMessage: /^feat/i }),
      push({ branches: ['main', '!main-old'], commitMessage: '*[ci]*', requires: [{ file: 'package.json', contains: 'react' }, { file: 'LEGACY', exists: false }] }),
      comment(),
      tag({ tags: ['v*'] }),
      release(),
      review({ states: ['approved'] }),
      review_comment(),
      dispatch({ inputs: { env: { type: 'choice', options: ['prod', 'staging'], default: 'staging', required: true }, dry: { type: 'boolean' } } }),
      create({ refTypes: ['tag'] }),
      svc.delete(),
      status({ states: ['failure'] }),
      workflow_run({ workflows: ['deploy'] }),
      fork(),
      star(),
      watch(),
      webhook({ events: ['b.event', 'a.event'] }),
      event('release.ready'),
      workflowComplete({ workflows: ['deploy'], statuses: ['failed'] }),
      jobComplete(),
      lifecycle({ events: ['registration.updated'] }),
      workflows_failed_batch({ threshold: 3 }),
    ],
    description: 'Builds everything',
    filter: () => true,
    rules: [rule('main only', (ctx) => ctx.event.branch === 'main')],
    contexts: ['npm', 'deploy'],
    concurrency: { cancelInProgress: false },
    timeout: 3_600_000,
    approval: { clauses: [{ users: ['carol'] }] },
    hashFiles: ['package.json', 'config/**', '!config/local.json'],
    registries: [{ url: 'https://npm.example.com/', scope: '@acme', tokenSecret: 'npm:NPM_TOKEN', alwaysAuth: true }],
    installEnv: ['npm:NPM_TOKEN', 'deploy:EXTRA', 'npm:NPM_TOKEN'],
    onCancel: noop,
    cleanup: noop,
    onSuccess: noop,
    onFailure: { run: noop, timeout: 2000 },
    jobs: {
      build,
      deploy: job({ runsOn: 'linux', needs: ['build'], checkout: false, steps: [step('ship', noop)] }),
      generated: dynamicJobs({ runsOn: 'linux', needs: ['build'], generate: () => ({}) }),
      matrixed: job({ runsOn: 'linux', matrix: () => ({ shard: [1, 2] }), steps: [] }),
    },
  });
}

t.test('a rich workflow: every field in the lock entry', async (t) => {
  const def = richWorkflow();
  const entry = workflowToLockEntry(def, { ...opts, resolvedHashFiles: ['package.json', 'config/a.json', 'config/a.json'] });
  const result = check.validate(entry);
  t.ok(result.ok, result.ok ? 'valid' : formatIssues(result.issues));

  t.equal(entry.name, 'CI build');
  t.equal(entry.source, '.svc/workflows/ci.ts#default');
  t.equal(entry.contentHash, HASH);
  t.equal(entry.compileSchemaVersion, 7);
  t.equal(entry.description, 'Builds everything');
  t.equal(entry.hasFilter, true);
  t.same(entry.rules, [{ name: 'main only', mode: 'run', ref: 'rules[0]' }]);
  t.same(entry.contexts, ['deploy', 'npm']);
  t.same(entry.hashFiles, ['package.json', 'config/**', '!config/local.json'], 'pattern order kept');
  t.same(entry.resolvedHashFiles, ['config/a.json', 'package.json']);
  t.same(entry.registries, [{ url: 'https://npm.example.com/', scope: '@acme', tokenSecret: 'npm:NPM_TOKEN', alwaysAuth: true }]);
  t.same(entry.installEnv, ['deploy:EXTRA', 'npm:NPM_TOKEN']);
  t.same(entry.concurrency, { hasGroup: false, cancelInProgress: false });
  t.equal(entry.timeout, 3_600_000);
  t.same(entry.approval, { clauses: [{ users: ['carol'], teams: [], roles: [], count: 1 }], when: 'always' });
  t.equal(entry.hasOnCancel, true);
  t.equal(entry.hasCleanup, true);
  t.equal(entry.hasOnSuccess, true);
  t.equal(entry.hasOnFailure, true);

  t.same(
    entry.triggers.map((tr) => tr.type),
    ['push', 'pr', 'comment', 'tag', 'release', 'review', 'review_comment', 'dispatch', 'create', 'delete', 'status', 'workflow_run', 'fork', 'star', 'watch', 'schedule', 'webhook', 'event', 'workflow_complete', 'job_complete', 'lifecycle', 'workflows_failed_batch'],
  );
  const byType = Object.fromEntries(entry.triggers.map((tr) => [tr.type, tr]));
  t.same(byType['push'], {
    type: 'push',
    branches: ['main', '!main-old'],
    paths: [],
    repositories: [],
    requires: [{ type: 'file-contains', path: 'package.json', text: 'react' }, { type: 'file-absent', path: 'LEGACY' }],
    commitMessage: { kind: 'glob', pattern: '*[ci]*' },
  });
  t.same(byType['pr'], {
    type: 'pr',
    actions: ['opened', 'synchronize'],
    branches: ['main', 'release/*'],
    paths: ['src/**', '!src/**/*.md'],
    repositories: [],
    requires: [],
    commitMessage: { kind: 'regex', source: '^feat', flags: 'i' },
  });
  t.same(byType['comment'], { type: 'comment', actions: ['created'], repositories: [] });
  t.same(byType['release'], { type: 'release', actions: ['published'], tags: [], repositories: [] });
  t.same(byType['review'], { type: 'review', actions: ['submitted'], states: ['approved'], branches: [], repositories: [] });
  t.same(byType['dispatch'], {
    type: 'dispatch',
    inputs: { env: { type: 'choice', required: true, options: ['prod', 'staging'], default: 'staging' }, dry: { type: 'boolean', required: false } },
    branches: [],
  });
  t.same(byType['delete'], { type: 'delete', refTypes: ['branch', 'tag'], branches: [], tags: [], repositories: [] });
  t.same(byType['workflow_run'], { type: 'workflow_run', workflows: ['deploy'], actions: ['completed'], conclusions: [], branches: [], repositories: [] });
  t.same(byType['watch'], { type: 'watch', actions: ['started'], repositories: [] });
  t.same(byType['schedule'], { type: 'schedule', cron: '0 3 * * *', timezone: 'Europe/Paris' });
  t.same(byType['webhook'], { type: 'webhook', events: ['a.event', 'b.event'] });
  t.same(byType['event'], { type: 'event', name: 'release.ready' });
  t.same(byType['workflow_complete'], { type: 'workflow_complete', workflows: ['deploy'], statuses: ['failed'] });
  t.same(byType['job_complete'], { type: 'job_complete', workflows: [], jobs: [], statuses: [] });
  t.same(byType['workflows_failed_batch'], { type: 'workflows_failed_batch', workflows: [], threshold: 3, windowSeconds: 3600 });

  t.same(entry.jobs.map((j) => j.name), ['build', 'deploy', 'generated', 'matrixed'], 'jobs sorted by name');
  const [build, deploy, generated, matrixed] = entry.jobs;
  t.same(build, {
    name: 'build',
    runsOn: ['!spot', 'kici:arch:x64', 'linux'],
    needs: [],
    contexts: ['build', 'npm'],
    checkout: { enabled: true, depth: 0, submodules: true, lfs: false },
    steps: [
      {
        name: 'version',
        hasOutputs: true,
        hasCheck: true,
        hasWhenInSync: true,
        hasRules: true,
        hasOnCancel: true,
        hasCleanup: true,
        approval: { clauses: [{ users: [], teams: [], roles: ['approver'], count: 1 }], when: 'always', reason: 'publishes', timeoutSeconds: 600 },
        timeout: 5000,
      },
      { name: 'test', hasOutputs: false },
    ],
    matrix: { type: 'static', axes: { node: [22, 24], os: ['linux', 'mac'] }, size: 4 },
    concurrency: { hasGroup: true, cancelInProgress: true, max: 2 },
    container: { image: 'node:24', options: ['--cpus', '2'] },
    gracePeriod: 30,
    timeout: 600_000,
    routing: { prefer: ['fast*'], avoid: ['slow'] },
    rules: [
      { name: 'not docs', mode: 'run', ref: 'jobs.build.rules[0]' },
      { name: 'draft', mode: 'skip', ref: 'jobs.build.rules[1]' },
    ],
    approval: { clauses: [{ users: ['alice', 'bob'], teams: ['release'], roles: [], count: 1 }], when: 'fork' },
    hasOutputs: true,
    hasOnCancel: true,
    hasCleanup: true,
    hasOnSuccess: true,
    hasOnFailure: true,
    hasBeforeStep: true,
    hasAfterStep: true,
  });
  t.same(deploy, {
    name: 'deploy',
    runsOn: ['linux'],
    needs: ['build'],
    contexts: [],
    checkout: { enabled: false, depth: 1, submodules: false, lfs: false },
    steps: [{ name: 'ship', hasOutputs: false }],
  });
  t.same(generated, {
    name: 'generated',
    runsOn: ['linux'],
    needs: ['build'],
    contexts: [],
    checkout: { enabled: true, depth: 1, submodules: false, lfs: false },
    steps: [],
    dynamic: true,
    generatorRef: 'jobs.generated.generate',
  });
  t.same(matrixed?.matrix, { type: 'dynamic', ref: 'jobs.matrixed.matrix' });

  t.notMatch(JSON.stringify(entry), /=>|function/, 'no closure source in the entry');

  // Every dynamic reference resolves to the closure in the loaded definition.
  t.equal(typeof resolveDefinitionRef(def, 'rules[0]'), 'object');
  t.equal((resolveDefinitionRef(def, build!.rules![1]!.ref) as { name: string }).name, 'draft');
  t.equal(typeof resolveDefinitionRef(def, generated!.generatorRef!), 'function');
  t.equal(typeof resolveDefinitionRef(def, (matrixed!.matrix as { ref: string }).ref), 'function');
  t.equal(typeof resolveDefinitionRef(def, 'jobs.build.steps[0].rules[0]'), 'object');
  t.throws(() => resolveDefinitionRef(def, 'jobs.nope.rules[0]'), { code: 'SVC_ERR_LOCK_REF_UNRESOLVED' });
  t.throws(() => resolveDefinitionRef(def, 'jobs..x'), { code: 'SVC_ERR_LOCK_REF_INVALID' });
});

t.test('array form of jobs and a minimal workflow', async (t) => {
  const def = workflow('min', {
    on: push(),
    jobs: [job({ name: 'a-b', runsOn: 'x', steps: [step('s', noop, { rules: [skip('never', () => false)] })] })],
  });
  const entry = workflowToLockEntry(def, opts);
  t.ok(check.check(entry));
  t.same(entry.triggers, [{ type: 'push', branches: [], paths: [], repositories: [], requires: [] }]);
  t.same(Object.keys(entry).sort(), ['compileSchemaVersion', 'contentHash', 'jobs', 'name', 'source', 'triggers'], 'optional fields omitted, flags not written as false');
  t.same(entry.jobs[0]?.steps, [{ name: 's', hasOutputs: false, hasRules: true }]);
  t.equal(typeof resolveDefinitionRef(def, 'jobs[0].steps[0].rules[0]'), 'object');
  t.equal(typeof resolveDefinitionRef(def, 'jobs["a-b"].steps[0].rules[0]'), 'object');
});

t.test('organization-wide trigger keeps its repository patterns', async (t) => {
  const entry = workflowToLockEntry(workflow('org', { on: push({ repositories: ['acme/*', '!acme/private'] }), jobs: {} }), opts);
  t.same(entry.triggers[0], { type: 'push', branches: [], paths: [], repositories: ['acme/*', '!acme/private'], requires: [] });
});

type Case = [string, () => unknown, string, RegExp];
const j = (o: Record<string, unknown> = {}) => job({ runsOn: 'linux', steps: [], ...o } as never);
const wf = (o: Record<string, unknown>) => workflow('w', { on: push(), jobs: {}, ...o } as never);

const cases: Case[] = [
  ['not a workflow', () => ({ kind: 'x' }), 'SVC_ERR_COMPILE_INVALID_DEFINITION', /ci\.ts at default: must be a workflow/],
  ['bad workflow name', () => workflow('a:b', { on: push(), jobs: {} }), 'SVC_ERR_COMPILE_INVALID_NAME', /at name/],
  ['unknown workflow field', () => wf({ descripton: 'x' }), 'SVC_ERR_COMPILE_INVALID_DEFINITION', /at descripton: unknown field/],
  ['no triggers', () => wf({ on: [] }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /at on: needs at least one trigger/],
  ['not a trigger', () => wf({ on: [{ type: 'push' }] }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /at on\[0\]: is not a trigger/],
  ['bad trigger type', () => wf({ on: [{ kind: 'svc.trigger', type: 'psh', options: {} }] }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /on\[0\]: is not a trigger/],
  ['misspelt action', () => wf({ on: pr({ actions: ['openned' as never] }) }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /on\.options\.actions\[0\]: "openned" is not one of/],
  ['unknown trigger option', () => wf({ on: push({ branch: ['x'] } as never) }), 'SVC_ERR_COMPILE_INVALID_DEFINITION', /on\.options\.branch: unknown field/],
  ['invalid cron', () => wf({ on: schedule('61 * * * *') }), 'SVC_ERR_COMPILE_INVALID_CRON', /on\.options\.cron: "61 \* \* \* \*" is not a valid cron/],
  ['cron with seconds', () => wf({ on: schedule('0 0 0 * * *') }), 'SVC_ERR_COMPILE_INVALID_CRON', /five fields/],
  ['bad cron nickname', () => wf({ on: schedule('@often') }), 'SVC_ERR_COMPILE_INVALID_CRON', /nickname/],
  ['bad time zone', () => wf({ on: schedule('0 0 * * *', { timezone: 'Mars/Base' }) }), 'SVC_ERR_COMPILE_INVALID_CRON', /time zone/],
  ['invalid branch glob', () => wf({ on: push({ branches: ['release/[a-'] }) }), 'SVC_ERR_COMPILE_INVALID_GLOB', /on\.options\.branches\[0\]: "release\/\[a-" is not a valid glob/],
  ['bare negation', () => wf({ on: push({ paths: ['!'] }) }), 'SVC_ERR_COMPILE_INVALID_GLOB', /negates nothing/],
  ['absolute path glob', () => wf({ on: push({ paths: ['/etc/**'] }) }), 'SVC_ERR_COMPILE_INVALID_GLOB', /relative/],
  ['dotdot hashFiles', () => wf({ hashFiles: ['../secret'] }), 'SVC_ERR_COMPILE_INVALID_GLOB', /at hashFiles\[0\]/],
  ['bad repository pattern', () => wf({ on: push({ repositories: ['acme'] }) }), 'SVC_ERR_COMPILE_INVALID_GLOB', /owner\/repo/],
  ['stateful regex flag', () => wf({ on: push({ commitMessage: /x/g }) }), 'SVC_ERR_COMPILE_INVALID_REGEX', /flags/],
  ['bad requires', () => wf({ on: push({ requires: [{ file: 'a', exists: false, contains: 'x' }] }) }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /absent/],
  ['glob in requires', () => wf({ on: push({ requires: [{ file: 'src/*.ts' }] }) }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /plain file path/],
  ['choice default', () => wf({ on: dispatch({ inputs: { e: { type: 'choice', options: ['a'], default: 'b' } } }) }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /inputs\.e\.default: must be one of the options/],
  ['empty webhook events', () => wf({ on: webhook({ events: [] }) }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /at least one event/],
  ['bad event name', () => wf({ on: event('has space') }), 'SVC_ERR_COMPILE_INVALID_NAME', /event name/],
  ['workflow_run without workflows', () => wf({ on: workflow_run({ workflows: [] }) }), 'SVC_ERR_COMPILE_INVALID_TRIGGER', /at least one workflow/],
  ['bad label', () => wf({ jobs: { a: j({ runsOn: ['linux x'] }) } }), 'SVC_ERR_COMPILE_INVALID_LABEL', /jobs\.a\.options\.runsOn\[0\]: "linux x" is not a valid label matcher/],
  ['label wildcard in middle', () => wf({ jobs: { a: j({ runsOn: ['gp*u'] }) } }), 'SVC_ERR_COMPILE_INVALID_LABEL', /label matcher/],
  ['only negated labels', () => wf({ jobs: { a: j({ runsOn: ['!spot'] }) } }), 'SVC_ERR_COMPILE_INVALID_LABEL', /not only negations/],
  ['contradictory labels', () => wf({ jobs: { a: j({ runsOn: ['gpu', '!gpu'] }) } }), 'SVC_ERR_COMPILE_INVALID_LABEL', /requires and forbids/],
  ['bad routing label', () => wf({ jobs: { a: j({ routing: { prefer: [''] } }) } }), 'SVC_ERR_COMPILE_INVALID_LABEL', /routing\.prefer\[0\]/],
  ['duplicate job names (array)', () => wf({ jobs: [j({ name: 'build' }), j({ name: 'Build' })] }), 'SVC_ERR_COMPILE_DUPLICATE_JOB', /at jobs\[1\]: job name "Build" is already used at jobs\[0\]/],
  ['duplicate job names (record)', () => wf({ jobs: { build: j(), BUILD: j() } }), 'SVC_ERR_COMPILE_DUPLICATE_JOB', /already used at jobs\.build/],
  ['array job without name', () => wf({ jobs: [j()] }), 'SVC_ERR_COMPILE_INVALID_NAME', /jobs\[0\]\.name: jobs given as an array need a name/],
  ['bad job name', () => wf({ jobs: { 'a b': j() } }), 'SVC_ERR_COMPILE_INVALID_NAME', /not a valid job name/],
  ['unknown need', () => wf({ jobs: { a: j(), b: j({ needs: ['c'] }) } }), 'SVC_ERR_COMPILE_UNKNOWN_NEED', /jobs\.b\.options\.needs: job "b" needs "c", which is not a job of this workflow \(jobs: a, b\)/],
  ['needs cycle', () => wf({ jobs: { a: j({ needs: ['c'] }), b: j({ needs: ['a'] }), c: j({ needs: ['b'] }) } }), 'SVC_ERR_COMPILE_NEEDS_CYCLE', /cycle: a → c → b → a/],
  ['self need', () => wf({ jobs: { a: j({ needs: ['a'] }) } }), 'SVC_ERR_COMPILE_NEEDS_CYCLE', /cycle: a → a/],
  ['duplicate step', () => wf({ jobs: { a: j({ steps: [step('s', noop), step('s', noop)] }) } }), 'SVC_ERR_COMPILE_DUPLICATE_STEP', /jobs\.a\.steps\[1\]: step name "s" is already used by steps\[0\]/],
  ['not a step', () => wf({ jobs: { a: j({ steps: [() => {}] }) } }), 'SVC_ERR_COMPILE_INVALID_STEP', /jobs\.a\.steps\[0\]: must be built with step/],
  ['whenInSync without check', () => wf({ jobs: { a: j({ steps: [step('s', noop, { whenInSync: noop } as never)] }) } }), 'SVC_ERR_COMPILE_INVALID_STEP', /needs a check/],
  ['bad outputs schema', () => wf({ jobs: { a: j({ steps: [step('s', noop, { outputs: Type.String() } as never)] }) } }), 'SVC_ERR_COMPILE_INVALID_STEP', /object schema/],
  ['bad matrix', () => wf({ jobs: { a: j({ matrix: { node: [] } }) } }), 'SVC_ERR_COMPILE_INVALID_MATRIX', /jobs\.a\.options\.matrix\.node: must be a non-empty array/],
  ['matrix too large', () => wf({ jobs: { a: j({ matrix: { x: Array.from({ length: 20 }, (_, i) => i), y: Array.from({ length: 20 }, (_, i) => i) } }) } }), 'SVC_ERR_COMPILE_INVALID_MATRIX', /400 jobs/],
  ['bad hook', () => wf({ onCancel: { run: 'x' } }), 'SVC_ERR_COMPILE_INVALID_HOOK', /onCancel\.run: must be a function/],
  ['bad hook timeout', () => wf({ jobs: { a: j({ cleanup: { run: noop, timeout: 0 } }) } }), 'SVC_ERR_COMPILE_INVALID_VALUE', /cleanup\.timeout: must be an integer/],
  ['bad approval', () => wf({ approval: { clauses: [] } }), 'SVC_ERR_COMPILE_INVALID_APPROVAL', /approval\.clauses: needs at least one clause/],
  ['approval count too high', () => wf({ approval: { clauses: [{ users: ['a'], count: 2 }] } }), 'SVC_ERR_COMPILE_INVALID_APPROVAL', /needs 2 approvals/],
  ['approval when', () => wf({ approval: { clauses: [{ users: ['a'] }], when: 'sometimes' } }), 'SVC_ERR_COMPILE_INVALID_APPROVAL', /approval\.when/],
  ['unqualified installEnv', () => wf({ contexts: ['npm'], installEnv: ['NPM_TOKEN'] }), 'SVC_ERR_COMPILE_INVALID_SECRET_REF', /installEnv\[0\]/],
  ['undeclared installEnv context', () => wf({ installEnv: ['npm:NPM_TOKEN'] }), 'SVC_ERR_COMPILE_UNDECLARED_CONTEXT', /"npm"/],
  ['installEnv context of a job only', () => wf({ installEnv: ['npm:NPM_TOKEN'], jobs: { a: j({ contexts: ['npm'] }) } }), 'SVC_ERR_COMPILE_UNDECLARED_CONTEXT', /installEnv\[0\]: uses secret context "npm", which only a job declares/],
  ['registry token context of a job only', () => wf({ registries: [{ url: 'https://npm.example', tokenSecret: 'npm:T' }], jobs: { a: j({ contexts: ['npm'] }) } }), 'SVC_ERR_COMPILE_UNDECLARED_CONTEXT', /registries\[0\]\.tokenSecret: .*declare it in the workflow's contexts/],
  ['installEnv reserved name', () => wf({ contexts: ['npm'], installEnv: ['npm:npm_config_userconfig'] }), 'SVC_ERR_COMPILE_INVALID_SECRET_REF', /installEnv\[0\]: projects npm_config_userconfig, a variable the install sets itself/],
  ['installEnv same name twice', () => wf({ contexts: ['a', 'b'], installEnv: ['a:TOKEN', 'b:TOKEN'] }), 'SVC_ERR_COMPILE_INVALID_SECRET_REF', /installEnv\[1\]: projects TOKEN, as a:TOKEN does/],
  ['registry with credentials', () => wf({ contexts: ['npm'], registries: [{ url: 'https://u:p@npm.example', tokenSecret: 'npm:T' }] }), 'SVC_ERR_COMPILE_INVALID_REGISTRY', /credentials/],
  ['registry bad url', () => wf({ contexts: ['npm'], registries: [{ url: 'ftp://x', tokenSecret: 'npm:T' }] }), 'SVC_ERR_COMPILE_INVALID_REGISTRY', /registries\[0\]\.url/],
  ['negative timeout', () => wf({ timeout: -1 }), 'SVC_ERR_COMPILE_INVALID_VALUE', /at timeout/],
  ['fractional grace period', () => wf({ jobs: { a: j({ gracePeriod: 1.5 }) } }), 'SVC_ERR_COMPILE_INVALID_VALUE', /gracePeriod/],
  ['bare function as rule', () => wf({ rules: [() => true] }), 'SVC_ERR_COMPILE_INVALID_DEFINITION', /rules\[0\]: must be built with rule/],
  ['dynamic job with steps field', () => wf({ jobs: { a: dynamicJobs({ runsOn: 'x', generate: 5 } as never) } }), 'SVC_ERR_COMPILE_INVALID_DEFINITION', /generate function/],
];

t.test('compile errors name the file, workflow and field path', async (t) => {
  for (const [name, build, code, message] of cases) {
    const err = (() => {
      try {
        workflowToLockEntry(build(), opts);
        return undefined;
      } catch (e) {
        return e as { code?: string; message?: string; details?: Record<string, unknown> };
      }
    })();
    t.ok(err, `${name}: throws`);
    t.equal(err?.code, code, `${name}: code`);
    t.match(err?.message ?? '', message, `${name}: message`);
    t.equal(err?.details?.['file'], '.svc/workflows/ci.ts', `${name}: names the file`);
  }
});

t.test('bad compile options are refused', async (t) => {
  const def = workflow('w', { on: push(), jobs: {} });
  t.throws(() => workflowToLockEntry(def, { ...opts, contentHash: 'nothex' }), { code: 'SVC_ERR_COMPILE_INVALID_DEFINITION' });
  t.throws(() => workflowToLockEntry(def, { ...opts, exportName: '1x' }), { code: 'SVC_ERR_COMPILE_INVALID_DEFINITION' });
  t.throws(() => workflowToLockEntry(def, { ...opts, sourcePath: 'a#b' }), { code: 'SVC_ERR_COMPILE_INVALID_DEFINITION' });
  t.throws(() => workflowToLockEntry(def, { ...opts, resolvedHashFiles: ['x'] }), { code: 'SVC_ERR_COMPILE_INVALID_DEFINITION' });
});
