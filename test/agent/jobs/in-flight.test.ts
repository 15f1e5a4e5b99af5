// In-flight job records (agent/jobs/in-flight.ts) on a real directory: sealed under the agent's
// token, so the released secrets a dispatch carries are not readable from the work dir; opened by
// the same token and agent id after a restart; refused (and dropped) when they cannot be opened or
// were tampered with; plain JSON (0600) only for an agent without a token. Beside each record,
// the job's step checkpoints, sealed the same way (docs/agent.md "When an agent restarts mid-job").
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { InFlightStore, carryProgress, rebase } from '../../../agent/jobs/in-flight.ts';
import type { JobDispatch } from '../../../schemas/wire/agent.ts';
import type { JobProgress } from '../../../schemas/wire/runner.ts';
import { dispatchOf } from '../fixtures/agent-harness.ts';

const SECRET = 'canary-9f2c-deploy-key';
const logger = pino({ level: 'silent' });

function workDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-in-flight-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function dispatch(): JobDispatch {
  return { type: 'job.dispatch', ...dispatchOf({ jobConfig: { secrets: { DEPLOY_KEY: SECRET } } }) } as JobDispatch;
}

t.test('sealed under the token: no secret on disk, the same agent opens it after a restart', async (t) => {
  const dir = workDir(t);
  const d = dispatch();
  const before = new InFlightStore(dir, 'agent-1', 'token-a');
  t.equal(before.sealed, true);
  await before.save(d);
  const file = join(before.dir, `${d.jobId}.json`);
  const text = readFileSync(file, 'utf8');
  t.notOk(text.includes(SECRET), 'the released secret is not in the file');
  t.notOk(text.includes('DEPLOY_KEY'), 'nor its name');
  t.equal(statSync(file).mode & 0o777, 0o600);
  const restarted = new InFlightStore(dir, 'agent-1', 'token-a');
  t.same([...(await restarted.load(logger)).values()], [d], 'the restarted agent gets the dispatch back, secrets included');
  await restarted.remove(d.jobId);
  t.same(readdirSync(restarted.dir), []);
});

t.test('another token or agent id cannot open a record: it is dropped, not run', async (t) => {
  const dir = workDir(t);
  const d = dispatch();
  await new InFlightStore(dir, 'agent-1', 'token-a').save(d);
  t.same((await new InFlightStore(dir, 'agent-1', 'token-b').load(logger)).size, 0, 'another token');
  t.same(readdirSync(join(dir, 'in-flight')), [], 'the unreadable record is removed');
  await new InFlightStore(dir, 'agent-1', 'token-a').save(d);
  t.same((await new InFlightStore(dir, 'agent-2', 'token-a').load(logger)).size, 0, 'another agent id');
  await new InFlightStore(dir, 'agent-1', 'token-a').save(d);
  t.same((await new InFlightStore(dir, 'agent-1', undefined).load(logger)).size, 0, 'no token at all');
});

t.test('a tampered or renamed record is dropped', async (t) => {
  const dir = workDir(t);
  const store = new InFlightStore(dir, 'agent-1', 'token-a');
  const d = dispatch();
  await store.save(d);
  const file = join(store.dir, `${d.jobId}.json`);
  const record = JSON.parse(readFileSync(file, 'utf8')) as { format: string; sealed: string };
  const raw = Buffer.from(record.sealed, 'base64');
  raw[raw.length - 1] = raw[raw.length - 1]! ^ 1;
  writeFileSync(file, JSON.stringify({ ...record, sealed: raw.toString('base64') }));
  t.same((await store.load(logger)).size, 0, 'a flipped ciphertext bit');
  await store.save(d);
  const other = dispatch();
  writeFileSync(join(store.dir, `${other.jobId}.json`), readFileSync(join(store.dir, `${d.jobId}.json`)));
  const loaded = await store.load(logger);
  t.same([...loaded.keys()], [d.jobId], "a record copied under another job's name does not open (bound to its job id)");
});

t.test('without a token: plain JSON readable by this user only; a sealing agent refuses plain records', async (t) => {
  const dir = workDir(t);
  const plain = new InFlightStore(dir, 'agent-1', undefined);
  t.equal(plain.sealed, false);
  const d = dispatch();
  await plain.save(d);
  const file = join(plain.dir, `${d.jobId}.json`);
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.same([...(await plain.load(logger)).values()], [d]);
  t.same((await new InFlightStore(dir, 'agent-1', 'token-a').load(logger)).size, 0, 'a plain record where records are sealed is not trusted');
});

t.test('step checkpoints: sealed beside the record, back after a restart, moved to the new workspace', async (t) => {
  const dir = workDir(t);
  const d = dispatch();
  const store = new InFlightStore(dir, 'agent-1', 'token-a');
  await store.save(d);
  const progress: JobProgress = {
    workspace: '/w/slots/0/src',
    steps: [
      {
        index: 0,
        name: 'build',
        status: 'completed',
        outputs: { token: SECRET },
        secretOutputs: ['token'],
        effects: [{ setEnv: 'OUT', value: '/w/slots/0/src/dist:/opt/x' }, { addPath: '/w/slots/0/src/bin' }, { addPath: '/w/slots/0/srcother' }],
      },
    ],
    running: { index: 1, name: 'deploy' },
  };
  await store.saveProgress(d.jobId, progress);
  t.notOk(readFileSync(join(store.dir, `${d.jobId}.progress`), 'utf8').includes(SECRET), 'a secret output is not readable on disk');
  const restarted = new InFlightStore(dir, 'agent-1', 'token-a');
  t.equal((await restarted.load(logger)).size, 1);
  t.same(restarted.progressOf(d.jobId), progress, 'the restarted agent gets the checkpoints back');
  t.same(carryProgress(progress, '/w/jobs/j/src').steps[0]!.effects, [
    { setEnv: 'OUT', value: '/w/jobs/j/src/dist:/opt/x' },
    { addPath: '/w/jobs/j/src/bin' },
    { addPath: '/w/slots/0/srcother' },
  ], 'paths under the old workspace move; a sibling with the same prefix does not');
  t.equal(rebase('/a/src', '/a/src', '/b/src'), '/b/src');
  await restarted.remove(d.jobId);
  t.same(readdirSync(restarted.dir), [], 'both records go with the job');
});

t.test('a progress record that does not open drops the job: finished steps are never run again', async (t) => {
  const dir = workDir(t);
  const d = dispatch();
  const store = new InFlightStore(dir, 'agent-1', 'token-a');
  await store.save(d);
  await store.saveProgress(d.jobId, { workspace: '/w', steps: [] });
  // Another job's progress renamed onto this one, and a stray progress without a job record.
  const other = dispatch();
  await store.saveProgress(other.jobId, { workspace: '/w', steps: [] });
  writeFileSync(join(store.dir, `${d.jobId}.progress`), readFileSync(join(store.dir, `${other.jobId}.progress`)));
  const loaded = await new InFlightStore(dir, 'agent-1', 'token-a').load(logger);
  t.equal(loaded.size, 0, 'the job is not reported in flight: the orchestrator fails it');
  t.same(readdirSync(store.dir), [], 'its records and the stray progress are removed');
});
