import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { startEmbeddedPostgres } from '../../../../kernel/services/db/embedded.ts';
import { resolveDatabase, sql } from '../../../../kernel/services/db/pool.ts';
import { eachDatabase, initialisedDataDir, testLogger } from '../../../fixtures/db.ts';

async function query(url: string, text: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

async function reachable(url: string): Promise<boolean> {
  return query(url, 'select 1').then(
    () => true,
    () => false,
  );
}

t.test('start, stop and restart keep the data and the port', async (t) => {
  const dataDir = await initialisedDataDir(t);
  const first = await startEmbeddedPostgres({ dataDir, logger: testLogger });
  t.teardown(() => first.stop());
  t.equal(first.pgDataDir, path.join(dataDir, 'postgres'));
  t.match(first.url, /^postgres:\/\/svc:[^@]+@127\.0\.0\.1:\d+\/postgres$/);
  await query(first.url, "create table kept (v text); insert into kept values ('hello')");
  await first.stop();
  await first.stop();
  t.equal(await reachable(first.url), false, 'stopped');

  const second = await startEmbeddedPostgres({ dataDir, logger: testLogger });
  t.teardown(() => second.stop());
  t.equal(second.port, first.port, 'the last port is reused when free');
  t.same(await query(second.url, 'select v from kept'), [{ v: 'hello' }]);
  t.same(await query(second.urlFor('postgres'), 'select current_user as u'), [{ u: 'svc' }]);
  await second.stop();
});

t.test('a fresh data directory is initialised once; credentials stay private', async (t) => {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `svc-test-pg-${process.pid}-fresh-`));
  t.teardown(() => fs.rm(dataDir, { recursive: true, force: true }));
  const server = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'nested', 'data'), logger: testLogger });
  t.teardown(() => server.stop());
  t.ok(await reachable(server.url));
  const state = await fs.stat(path.join(dataDir, 'nested', 'data', 'postgres.json'));
  t.equal(state.mode & 0o077, 0, 'credentials file is not readable by others');
  t.equal(await fs.access(path.join(dataDir, 'nested', 'data', 'postgres.initdb')).then(() => true, () => false), false, 'no scratch left');
  await server.stop();
});

t.test('two starts in one process share the server until the last stop', async (t) => {
  const dataDir = await initialisedDataDir(t);
  const [a, b] = await Promise.all([
    startEmbeddedPostgres({ dataDir, logger: testLogger }),
    startEmbeddedPostgres({ dataDir, logger: testLogger }),
  ]);
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  t.equal(a.port, b.port);
  await a.stop();
  await a.stop();
  t.equal(await reachable(b.url), true, 'still running for the other handle');
  await b.stop();
  t.equal(await reachable(b.url), false, 'stopped with the last handle');
});

t.test('a taken port is a clear error', async (t) => {
  const dataDir = await initialisedDataDir(t);
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const port = (blocker.address() as net.AddressInfo).port;
  await t.rejects(startEmbeddedPostgres({ dataDir, port, logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_PORT_IN_USE', message: new RegExp(String(port)) });
  // Nothing was left running: the directory starts fine on another port.
  const server = await startEmbeddedPostgres({ dataDir, logger: testLogger });
  t.teardown(() => server.stop());
  t.not(server.port, port);
  await server.stop();
});

t.test('a stale postmaster.pid is removed; a live server on the directory is refused', async (t) => {
  const dataDir = await initialisedDataDir(t);
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
  // A pid that is certainly dead: a child that has exited.
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  for (const pid of [Number(dead.stdout), process.pid]) {
    await fs.writeFile(pidFile, `${pid}\n${path.join(dataDir, 'postgres')}\n1700000000\n5432\n\n\n`);
    const server = await startEmbeddedPostgres({ dataDir, logger: testLogger });
    t.ok(await reachable(server.url), `started over a stale pid file (pid ${pid})`);
    await server.stop();
  }

  const running = await startEmbeddedPostgres({ dataDir, logger: testLogger });
  t.teardown(() => running.stop());
  const other = await initialisedDataDir(t);
  await fs.copyFile(pidFile, path.join(other, 'postgres', 'postmaster.pid'));
  await t.rejects(startEmbeddedPostgres({ dataDir: other, logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_IN_USE' });
  await running.stop();
});

t.test('bad input and damaged state are refused with clear errors', async (t) => {
  await t.rejects(startEmbeddedPostgres({ dataDir: '', logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_DATA_DIR' });
  await t.rejects(startEmbeddedPostgres({ dataDir: '/tmp/x', port: 70000, logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_PORT' });
  await t.rejects(startEmbeddedPostgres({ dataDir: '/tmp/x', settings: { 'fsync=off -c x': 'y' }, logger: testLogger }), {
    code: 'SVC_ERR_DB_EMBEDDED_SETTING',
  });

  const damaged = await initialisedDataDir(t);
  await fs.writeFile(path.join(damaged, 'postgres.json'), '{"user": 1}');
  await t.rejects(startEmbeddedPostgres({ dataDir: damaged, logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_STATE' });

  const lost = await initialisedDataDir(t);
  await fs.rm(path.join(lost, 'postgres.json'));
  await t.rejects(startEmbeddedPostgres({ dataDir: lost, logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_STATE', message: /credentials file/ });

  const foreign = await fs.mkdtemp(path.join(os.tmpdir(), `svc-test-pg-${process.pid}-foreign-`));
  t.teardown(() => fs.rm(foreign, { recursive: true, force: true }));
  await fs.mkdir(path.join(foreign, 'postgres'));
  await fs.writeFile(path.join(foreign, 'postgres', 'precious.txt'), 'keep me');
  await t.rejects(startEmbeddedPostgres({ dataDir: foreign, logger: testLogger }), { code: 'SVC_ERR_DB_EMBEDDED_DATA_DIR' });
  t.equal(await fs.readFile(path.join(foreign, 'postgres', 'precious.txt'), 'utf8'), 'keep me', 'nothing was touched');
});

t.test('missing binaries are a clear error naming the remedy', async (t) => {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `svc-test-pg-${process.pid}-missing-`));
  t.teardown(() => fs.rm(dataDir, { recursive: true, force: true }));
  const child = path.join(import.meta.dirname, '../../../fixtures/db-embedded-missing-child.ts');
  const run = spawnSync(process.execPath, [child, dataDir], { encoding: 'utf8', timeout: 120_000 });
  const [code, ...message] = run.stdout.split('\n');
  t.equal(code, 'SVC_ERR_DB_EMBEDDED_MISSING', run.stderr);
  t.match(message.join('\n'), /SVC_DATABASE_URL/);
  t.same(await fs.readdir(dataDir), [], 'nothing was written');
});

// As an svc agent's process sandbox runs a job: bubblewrap with a user namespace mapping root only.
const bwrap = spawnSync('bwrap', ['--version']).status === 0;
t.test('root in a user namespace without the postgres uid: refused up front, naming the way out', { skip: process.getuid?.() !== 0 || !bwrap ? 'needs root and bubblewrap' : false }, async (t) => {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `svc-test-pg-${process.pid}-userns-`));
  t.teardown(() => fs.rm(dataDir, { recursive: true, force: true }));
  const child = path.join(import.meta.dirname, '../../../fixtures/db-embedded-start-child.ts');
  const sandbox = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--bind', dataDir, dataDir, '--unshare-all', '--die-with-parent', '--'];
  const run = spawnSync('bwrap', [...sandbox, process.execPath, child, path.join(dataDir, 'data')], { encoding: 'utf8', timeout: 120_000 });
  const [code, ...message] = run.stdout.split('\n');
  t.equal(code, 'SVC_ERR_DB_EMBEDDED_INIT', run.stderr);
  t.match(message.join('\n'), /user namespace that maps no uid for the postgres user .*SVC_AGENT_BWRAP=never/);
  t.same(await fs.readdir(path.join(dataDir, 'data')), [], 'nothing written: no credentials file, no half cluster');
});

t.test('resolveDatabase without a URL runs embedded PostgreSQL and stops it on close', async (t) => {
  const dataDir = await initialisedDataDir(t);
  const resolved = await resolveDatabase({ url: '', dataDir, logger: testLogger, database: 'orchestrator' });
  t.teardown(() => resolved.close());
  t.equal(resolved.embedded, true);
  t.equal(await resolved.pool.oneFirst(sql.unsafe`select current_database()`), 'orchestrator');
  await resolved.close();
  await resolved.close();
  t.equal(await reachable(resolved.url), false, 'embedded server stopped');

  const again = await resolveDatabase({ dataDir, logger: testLogger, database: 'orchestrator' });
  t.teardown(() => again.close());
  t.equal(await again.pool.oneFirst(sql.unsafe`select current_database()`), 'orchestrator', 'existing database reused');
  await again.close();
});

await eachDatabase(t, async (t, db) => {
  await t.test('resolveDatabase with a URL uses that server and leaves it running', async (t) => {
    const resolved = await resolveDatabase({ url: ` ${db.url} `, dataDir: '/nonexistent/unused', logger: testLogger });
    t.equal(resolved.embedded, false);
    t.equal(await resolved.pool.oneFirst(sql.unsafe`select current_database()`), db.name);
    await resolved.close();
    t.equal(await reachable(db.url), true);
  });
}, { schema: 'empty' });
