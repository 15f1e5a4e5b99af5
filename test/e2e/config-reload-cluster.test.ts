// Shared config across a cluster, with REAL processes: two svc-orchestrator nodes on one
// PostgreSQL and the real svc-admin. A version written by `svc-admin config set` (seed, pairs),
// or `config rollback`, is reloaded by both nodes (their config version gauge moves); a local
// field is refused with nothing written; an export goes back in with `set --file` (a redacted
// one is refused); SIGHUP to one node reloads both (a version inserted
// without any notification shows up on both); the reload metric counts per source.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { createDatabase, sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../fixtures/db.ts';
import { morePasses, RUN_CONTROL_PASSES } from '../fixtures/passes.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';

t.setTimeout(1_200_000);

const ADMIN_TOKEN = 'canary-e2e-admin-token-Qm4Vx8Lp2';
const JOIN_TOKEN = 'canary-e2e-join-token-Hs7Tc1Wd5';

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function metric(node: StartedProgram, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const line = text.split('\n').find((l) => (labels === '' ? l.startsWith(`${name} `) : l.startsWith(`${name}{`) && labels.split(',').every((label) => l.includes(label))));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}
const gauge = (node: StartedProgram) => metric(node, 'svc_orch_config_version');
const reloads = (node: StartedProgram, result: string, source: string) => metric(node, 'svc_orch_config_reload_total', `result="${result}",source="${source}"`);

await eachDatabase(t, async (t, db) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-config-e2e-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const base = {
    PATH: process.env['PATH'],
    HOME: dir,
    SVC_DATABASE_URL: db.url,
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_SECRET_KEY: 'e'.repeat(64),
    SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_CLUSTER_JOIN_TOKEN: JOIN_TOKEN,
    SVC_AGENT_AUTH: 'none',
  };
  const nodes: StartedProgram[] = [];
  t.teardown(async () => {
    for (const node of nodes) await node.stop();
  });
  for (const id of ['node-1', 'node-2']) {
    nodes.push(await startProgram(join(REPO_ROOT, 'bin/svc-orchestrator.ts'), 'svc-orchestrator', { env: { ...base, SVC_INSTANCE_ID: id, SVC_DATA_DIR: join(dir, id) }, readyTimeoutMs: 90_000 }));
  }
  const [node1, node2] = nodes as [StartedProgram, StartedProgram];
  const admin = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), ['config', ...args], { env: { ...base, SVC_DATA_DIR: join(dir, 'node-1') }, cwd: dir, timeoutMs: 120_000 });
  const bothAt = (version: number) => until(`both nodes at version ${version}`, async () => ((await gauge(node1)) === version && (await gauge(node2)) === version ? true : undefined));

  await t.test('svc-admin config set --seed and set path=value: both nodes reload each version', async (t) => {
    t.equal(await gauge(node1), 0, 'no version yet');
    const seeded = await admin(['set', '--seed', '--json']);
    t.equal(seeded.code, 0, seeded.stderr);
    const v1 = JSON.parse(seeded.stdout) as { version: number; createdBy: string; encryptedPaths: string[] };
    t.equal(v1.createdBy, 'cli:seed');
    t.same(v1.encryptedPaths.sort(), ['cluster.joinToken', 'secrets.bootstrapAdminToken', 'secrets.key'], 'the running secrets were sealed');
    await bothAt(v1.version);
    const set = await admin(['set', 'queue.maxDepth=123', 'agentAuth=token', '--description', 'smaller', '--json']);
    t.equal(set.code, 0, set.stderr);
    const v2 = JSON.parse(set.stdout) as { version: number; createdBy: string };
    t.match(v2, { version: v1.version + 1, createdBy: 'cli:set' });
    await bothAt(v2.version);
    t.ok((await reloads(node2, 'success', 'cluster')) >= 2, 'node 2 reloaded through the cluster');
  });

  await t.test('show, history and export --redacted never print the secrets', async (t) => {
    const show = await admin(['show', '--json']);
    t.equal(show.code, 0, show.stderr);
    t.match(JSON.parse(show.stdout), { createdBy: 'cli:set', config: { queue: { maxDepth: 123 }, secrets: { bootstrapAdminToken: '***REDACTED***', key: '***REDACTED***' }, cluster: { joinToken: '***REDACTED***' } } });
    const history = await admin(['history', '--json']);
    t.same((JSON.parse(history.stdout) as { versions: Array<{ createdBy: string }> }).versions.map((v) => v.createdBy), ['cli:set', 'cli:seed']);
    const exported = await admin(['export', '--redacted']);
    t.equal(exported.code, 0, exported.stderr);
    t.match(exported.stdout, /bootstrapAdminToken: "?\*\*\*REDACTED\*\*\*"?/);
    t.match(exported.stdout, /joinToken: "?\*\*\*REDACTED\*\*\*"?/);
    for (const out of [show.stdout, history.stdout, exported.stdout]) t.notOk(out.includes('canary-'), 'no secret printed');
  });

  await t.test('a local field is refused by svc-admin, nothing written', async (t) => {
    const before = await gauge(node1);
    const refused = await admin(['set', 'server.port=9999']);
    t.equal(refused.code, 1);
    t.match(refused.stderr, /SVC_ERR_CONFIG_LOCAL_FIELD: server\.port is a local field/);
    const history = JSON.parse((await admin(['history', '--json'])).stdout) as { versions: Array<{ version: number }> };
    t.equal(history.versions[0]?.version, before, 'no new version');
  });

  await t.test('rollback writes a new version copying the old one; both nodes take it', async (t) => {
    const rolled = await admin(['rollback', '1', '--json']);
    t.equal(rolled.code, 0, rolled.stderr);
    const v3 = JSON.parse(rolled.stdout) as { version: number; createdBy: string };
    t.equal(v3.createdBy, 'cli:rollback');
    await bothAt(v3.version);
    const shown = JSON.parse((await admin(['show', '--json'])).stdout) as { config: { queue: { maxDepth: number } } };
    t.equal(shown.config.queue.maxDepth, 10_000, 'the seed content is back');
  });

  await t.test('export → set --file round trip; a redacted export sent back is refused', async (t) => {
    const plain = await admin(['export']);
    t.equal(plain.code, 0, plain.stderr);
    const file = join(dir, 'shared.yaml');
    await writeFile(file, plain.stdout.replace('maxDepth: 10000', 'maxDepth: 789'));
    const set = await admin(['set', '--file', file, '--json']);
    t.equal(set.code, 0, set.stderr);
    const written = JSON.parse(set.stdout) as { version: number; encryptedPaths: string[] };
    t.same(written.encryptedPaths.sort(), ['cluster.joinToken', 'secrets.bootstrapAdminToken', 'secrets.key'], 'the secrets from the file are sealed again');
    await bothAt(written.version);
    const shown = JSON.parse((await admin(['show', '--json'])).stdout) as { config: { queue: { maxDepth: number } } };
    t.equal(shown.config.queue.maxDepth, 789);
    const redacted = await admin(['export', '--redacted']);
    await writeFile(file, redacted.stdout);
    const refused = await admin(['set', '--file', file]);
    t.equal(refused.code, 1);
    t.match(refused.stderr, /SVC_ERR_CONFIG_REDACTED_VALUE/);
    t.equal(await gauge(node1), written.version, 'nothing written');
  });

  await t.test('SIGHUP to one node reloads both', async (t) => {
    // A version nobody announced: only a reload finds it.
    const direct = await createDatabase({ url: db.url, logger: testLogger, maxPoolSize: 1 });
    t.teardown(() => direct.end());
    // Reloads node 2 attempted, from any source.
    const attempted = async () =>
      (await (await fetch(`${node2.url}/metrics`)).text())
        .split('\n')
        .filter((l) => l.startsWith('svc_orch_config_reload_total{') && l.includes('result="attempted"'))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    const attemptedBefore = await attempted();
    const version = Number(await direct.oneFirst(sql.unsafe`INSERT INTO config_versions (id, config, created_by, description) VALUES (${randomUUID()}, ${sql.jsonb({ queue: { maxDepth: 456 } })}, 'cli:set', 'quiet write') RETURNING version`));
    // Two run-control passes on node 2 (its 1 s tick), counted rather than slept: time in which a
    // reload driven by anything but a notification or a signal would have shown.
    await morePasses(node2.url, RUN_CONTROL_PASSES);
    t.not(await gauge(node2), version, 'unannounced: node 2 has not seen it');
    t.equal(await attempted(), attemptedBefore, 'node 2 attempted no reload');
    const sighupBefore = await reloads(node1, 'success', 'sighup');
    const clusterBefore = await reloads(node2, 'success', 'cluster');
    node1.child.kill('SIGHUP');
    await bothAt(version);
    t.equal(await reloads(node1, 'success', 'sighup'), sighupBefore + 1, 'node 1 counted a sighup reload');
    t.equal(await reloads(node2, 'success', 'cluster'), clusterBefore + 1, 'node 2 counted a cluster reload');
    t.equal(await reloads(node2, 'attempted', 'sighup'), 0, 'node 2 got no signal');
    t.equal(node1.child.exitCode, null, 'SIGHUP did not stop the node');
  });

  await t.test('the database holds none of the secrets in plain text', async (t) => {
    const direct = await createDatabase({ url: db.url, logger: testLogger, maxPoolSize: 1 });
    t.teardown(() => direct.end());
    const text = (await direct.anyFirst(sql.unsafe`SELECT t::text FROM config_versions t`)).join('\n');
    t.ok(text.includes('cli:seed'), 'control: the rows were read');
    t.notOk(text.includes(ADMIN_TOKEN));
    t.notOk(text.includes(JOIN_TOKEN));
    t.notOk(text.includes('e'.repeat(64)));
  });
});
