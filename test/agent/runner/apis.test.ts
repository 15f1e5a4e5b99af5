// Step APIs that go through the agent (api.request/api.response with a scripted agent), secret
// masking messages, and bad input of every kind on the IPC channel and in runner.start.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRunner, startMessage, type ApiRequestMessage, type RunnerRun } from '../../fixtures/run-runner.ts';


function clean(t: Test, run: RunnerRun): void {
  t.same(run.invalid, [], 'every message matches the wire schema');
  t.equal(run.exitCode, 0, 'exit code 0');
}

const agentApi = (request: ApiRequestMessage): unknown => {
  const args = request.args as Record<string, unknown>;
  switch (request.api) {
    case 'emit':
      if (args['name'] === 'fails.here') throw { code: 'SVC_ERR_TEST_EVENTS_REFUSED', message: 'event refused' };
      return { deliveryId: 'delivery-1' };
    case 'oidc.token':
      return args['audience'] === 'deferred' ? { deferred: true, code: 'unavailable' } : { token: 'eyJhbGc.payload.sig', expiresIn: 600 };
    case 'cache.restore':
      return { hit: true, matchedKey: 'deps-abc' };
    case 'cache.save':
      return { saved: true };
    case 'artifacts.upload':
      return { name: 'dist', sizeBytes: 42, digest: 'sha256:' + 'a'.repeat(64), fileCount: 1 };
    case 'attest':
      return { bundlePaths: ['dist/app.js.svc.json'], deferred: false };
  }
  throw new Error(`unexpected api ${request.api}`);
};

t.test('emit, oidc, cache, artifacts and attest round-trip through the agent', async (t) => {
  const run = await runRunner({ file: 'apis.ts', workflowName: 'apis', jobName: 'calls', api: agentApi });
  clean(t, run);
  t.equal(run.result?.status, 'completed', run.result?.reason ?? 'completed');
  const requests = run.messages.filter((m): m is ApiRequestMessage => m.type === 'api.request').map((m) => [m.api, m.args]);
  t.same(requests, [
    ['emit', { name: 'deploy.done', payload: { version: '1.2.3', when: 'now' } }],
    ['oidc.token', { audience: 'https://aws.example' }],
    ['oidc.token', { audience: 'deferred' }],
    ['cache.restore', { key: 'deps-abc', paths: ['node_modules'], restoreKeys: ['deps-'] }],
    ['cache.save', { key: 'deps-abc', paths: ['node_modules', '.cache'] }],
    ['artifacts.upload', { name: 'dist', paths: ['dist/app.js'] }],
    ['attest', { subjects: [{ path: 'dist/app.js' }], predicate: { builder: 'svc' } }],
    ['emit', { name: 'fails.here' }],
  ]);
  const out = run.result!.outputs as Record<string, string>;
  t.same(JSON.parse(out['emitted']!), { deliveryId: 'delivery-1' });
  t.same(JSON.parse(out['token']!), { token: 'eyJhbGc.payload.sig', expiresIn: 600 });
  t.same(JSON.parse(out['deferred']!), { deferred: true, code: 'unavailable' });
  t.same(JSON.parse(out['restored']!), { hit: true, matchedKey: 'deps-abc' });
  t.same(JSON.parse(out['saved']!), { saved: true });
  t.same(JSON.parse(out['uploaded']!), { name: 'dist', sizeBytes: 42, digest: 'sha256:' + 'a'.repeat(64), fileCount: 1 });
  t.same(JSON.parse(out['attested']!), { bundlePaths: ['dist/app.js.svc.json'], deferred: false });
  t.match(out['refused'], /^ctx\.cache\.save: key: .+; paths: /, 'bad args are refused in the runner with their paths');
  t.equal(out['agentError'], 'SVC_ERR_TEST_EVENTS_REFUSED: emit failed: event refused', 'an agent error rejects with its code');
  t.equal(out['password'], 'hunter2-secret', 'a secret output is an output like any other');
});

t.test('a minted token and a secret output are sent as runner.secret before any line can show them', async (t) => {
  const run = await runRunner({ file: 'apis.ts', workflowName: 'apis', jobName: 'calls', api: agentApi });
  const secrets = run.messages.filter((m) => m.type === 'runner.secret').map((m) => (m as { value: string }).value);
  t.same(secrets, ['eyJhbGc.payload.sig', 'hunter2-secret']);
  const secretAt = run.messages.findIndex((m) => m.type === 'runner.secret' && (m as { value: string }).value === 'eyJhbGc.payload.sig');
  const lineAt = run.messages.findIndex((m) => m.type === 'runner.log' && m.text.includes('eyJhbGc.payload.sig'));
  t.ok(secretAt >= 0 && lineAt > secretAt, 'runner.secret precedes the line with the token');
  const noSecret = run.messages.filter((m) => m.type === 'api.request').every((m) => !JSON.stringify(m).includes('hunter2'));
  t.ok(noSecret, 'secret output never sent in an api.request');
});

t.test('an invalid api.response result fails the step with a clear reason', async (t) => {
  const run = await runRunner({ file: 'apis.ts', workflowName: 'apis', jobName: 'bad-result', api: () => ({ deliveryId: 7, extra: true }) });
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.match(run.result?.reason, /^step "emit" failed: emit: the agent answered with an invalid result: /);
});

t.test('bad runner.start messages: a failed result naming the field, no step runs', async (t) => {
  const cases: Record<string, { raw?: (start: Record<string, unknown>) => unknown; start?: Record<string, unknown>; reason: RegExp }> = {
    'missing field': { raw: ({ jobName: _j, ...rest }) => rest, reason: /^refused runner\.start: jobName: is required$/ },
    'unknown field': { raw: (s) => ({ ...s, surprise: 1 }), reason: /^refused runner\.start: surprise: unknown field$/ },
    'wrong type': { raw: (s) => ({ ...s, hookTimeoutMs: 'soon' }), reason: /^refused runner\.start: hookTimeoutMs: / },
    'relative workflow file': { raw: (s) => ({ ...s, workflowFile: 'x.ts' }), reason: /workflowFile must be an absolute path/ },
    'missing workflow file': { start: { workflowFile: '/nonexistent/wf.ts' }, reason: /^cannot load workflow file \/nonexistent\/wf\.ts: / },
    'import throws': { start: { workflowFile: join(import.meta.dirname, '../../fixtures/runner-workflows/broken.ts') }, reason: /config missing at import time/ },
    'not a workflow export': { start: { exportName: 'nope' }, reason: /^export "nope" of .*steps\.ts is not a workflow\(\.\.\.\) definition$/ },
    'wrong workflow name': { start: { workflowName: 'other' }, reason: /is workflow "steps", not "other": the lock is stale$/ },
    'unknown job': { start: { jobName: 'ghost' }, reason: /^workflow "steps" has no job "ghost" \(jobs: three, ruled, / },
    'missing workspace': { start: { workspace: '/nonexistent/ws' }, reason: /^cannot enter workspace \/nonexistent\/ws: / },
  };
  const workspace = await mkdtemp(join(tmpdir(), 'svc-runner-bad-'));
  t.teardown(() => rm(workspace, { recursive: true, force: true }));
  for (const [name, c] of Object.entries(cases)) {
    const options = { file: 'steps.ts', workflowName: 'steps', jobName: 'three' };
    const start = { ...startMessage(options, workspace), ...c.start } as Record<string, unknown>;
    const run = await runRunner({ ...options, start: c.start, rawStart: c.raw === undefined ? start : c.raw(start) });
    t.same(run.invalid, [], `${name}: valid wire messages`);
    t.equal(run.exitCode, 0, `${name}: exit 0`);
    t.equal(run.result?.status, 'failed', `${name}: failed`);
    t.match(run.result?.reason, c.reason, `${name}: reason`);
    t.notOk(run.messages.some((m) => m.type === 'runner.step'), `${name}: nothing ran`);
  }
});

t.test('garbage, a second start, unknown responses and unknown types are refused and change nothing', async (t) => {
  const workspace = await mkdtemp(join(tmpdir(), 'svc-runner-junk-'));
  t.teardown(() => rm(workspace, { recursive: true, force: true }));
  const options = { file: 'steps.ts', workflowName: 'steps', jobName: 'three', start: { workspace } };
  const start = startMessage(options, workspace);
  const run = await runRunner({
    ...options,
    // Not a start: the runner complains and keeps waiting for one.
    rawStart: { type: 'runner.hello' },
    onMessage: (message, control) => {
      if (message.type === 'runner.ready') {
        control.send(start);
        control.send(start);
        control.send({ type: 'api.response', requestId: 'r999', result: {} });
        control.send({ type: 'runner.cancel', reason: 'x', force: 'yes' });
        control.send(['not', 'an', 'object']);
        control.send({ type: 'runner.teleport' });
      }
    },
  });
  clean(t, run);
  t.equal(run.result?.status, 'completed', 'the job ran as if nothing happened');
  t.same(run.lines('(runner)', 'system'), [
    'refused runner.hello: type: unknown message type "runner.hello"',
    'refused runner.start: the job has already started',
    'refused api.response: no request "r999" is pending',
    'refused runner.cancel: force: must be boolean',
    'refused message: must be an object',
    'refused runner.teleport: type: unknown message type "runner.teleport"',
  ]);
});
