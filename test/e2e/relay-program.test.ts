// The shipped programs end to end: `svc-admin relay org create` provisions an org and prints its
// token once, `svc-relay` starts on that database and prints its ready line, a webhook is
// buffered, the relay is stopped with SIGTERM and restarted, and an orchestrator link then gets
// the delivery. Real child processes, real PostgreSQL, loopback only.
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { eachDatabase } from '../fixtures/db.ts';
import { fakeOrchestrator, sendWebhook, until } from '../kernel/relay/harness.ts';

const execFileAsync = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const node = process.execPath;

async function admin(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(node, [path.join(root, 'bin/svc-admin.ts'), ...args], { env: { ...process.env, ...env }, cwd: root });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function startRelayProcess(t: Parameters<Parameters<typeof eachDatabase>[1]>[0], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(node, [path.join(root, 'bin/svc-relay.ts')], {
    env: { ...process.env, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_SERVER_LOG_LEVEL: 'warn', ...env },
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no ready line; stderr: ${err}`)), 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^svc-relay ready (\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) => reject(new Error(`svc-relay exited ${code}: ${err}`)));
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', (code) => resolve(code))));
}

await eachDatabase(t, async (t, db) => {
  const env = { SVC_RELAY_DATABASE_URL: db.url };
  const created = await admin(['relay', 'org', 'create', 'acme', '--json'], env);
  t.equal(created.code, 0, created.stderr);
  const { orgId, token } = JSON.parse(created.stdout) as { orgId: string; token: string };
  t.equal(orgId, 'acme');
  t.match(token, /^svcp_/);
  const again = await admin(['relay', 'org', 'create', 'acme'], env);
  t.equal(again.code, 1);
  t.match(again.stderr, /SVC_ERR_RELAY_ORG_EXISTS/);
  const usage = await admin(['relay', 'org', 'list'], { SVC_RELAY_DATABASE_URL: '' });
  t.equal(usage.code, 2, 'no database named: usage error');

  const first = await startRelayProcess(t, env);
  const o = await fakeOrchestrator(t, first.url, token);
  t.same((await sendWebhook(first.url, 'acme', { delivery: 'e2e-live' })).json, { status: 'accepted' });
  await o.close();
  t.same((await sendWebhook(first.url, 'acme', { delivery: 'e2e-buffered', body: '{"kept": true}' })).json, { status: 'buffered' });
  first.child.kill('SIGTERM');
  t.equal(await exitOf(first.child), 0, 'clean stop on SIGTERM');

  const second = await startRelayProcess(t, env);
  const o2 = await fakeOrchestrator(t, second.url, token);
  await until(() => o2.received.length >= 1, 10_000, 'replay after restart');
  t.equal(o2.received[0]!.deliveryId, 'e2e-buffered');
  t.equal(Buffer.from(o2.received[0]!.bodyBase64, 'base64').toString(), '{"kept": true}');
  const listed = await admin(['relay', 'org', 'list', '--json'], env);
  t.equal(JSON.parse(listed.stdout).orgs[0].sources, 1);
  await o2.close();
  second.child.kill('SIGTERM');
  t.equal(await exitOf(second.child), 0);

  const bad = spawn(node, [path.join(root, 'bin/svc-relay.ts')], { env: { ...process.env, SVC_RELAY_PORT: '70000' }, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  bad.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  t.equal(await exitOf(bad), 1, 'fatal start error exits 1');
  t.match(stderr, /^svc-relay: SVC_ERR_CONFIG_INVALID: .*relay\.port/m);
});
