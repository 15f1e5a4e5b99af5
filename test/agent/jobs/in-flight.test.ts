// In-flight job records (agent/jobs/in-flight.ts) on a real directory: sealed under the agent's
// token, so the released secrets a dispatch carries are not readable from the work dir; opened by
// the same token and agent id after a restart; refused (and dropped) when they cannot be opened or
// were tampered with; plain JSON (0600) only for an agent without a token.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { InFlightStore } from '../../../agent/jobs/in-flight.ts';
import type { JobDispatch } from '../../../schemas/wire/agent.ts';
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
