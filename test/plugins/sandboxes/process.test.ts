// The process sandbox: IPC, group kill, and bubblewrap confinement (a job cannot write outside
// its workspace).
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { findExecutable } from '../../../plugins/sandboxes/shared/which.ts';
import { tempDir } from '../../agent/fixtures/trees.ts';

const tmp = await tempDir('svc-sbx-process-');
t.teardown(tmp.cleanup);
const env = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };

// Writes inside and outside its workspace, reports both over IPC.
const probe = `
const fs = require('node:fs');
process.on('message', (m) => {
  const r = {};
  for (const [k, p] of Object.entries(m)) { try { fs.writeFileSync(p, 'x'); r[k] = 'written'; } catch (e) { r[k] = e.code; } }
  process.send(r, () => process.exit(0));
});
process.send({ ready: true });
`;

async function runProbe(sandbox: ReturnType<typeof createProcessSandbox>, targets: Record<string, string>) {
  const src = join(tmp.dir, `ws-${Math.random().toString(16).slice(2)}`);
  await mkdir(src);
  const ws = await sandbox.prepareWorkspace({ jobId: 'j', sourceDir: src });
  // Node and the repository (tap's loaders live in its node_modules) stay readable under bwrap's
  // fresh /tmp, as the agent arranges for its runner.
  const proc = await sandbox.spawn({ workspace: ws, argv: [process.execPath, '-e', probe], env, cwd: ws.dir, ipc: true, readPaths: [process.execPath, REPO_ROOT] });
  const result = new Promise<Record<string, string>>((resolve) => {
    proc.onMessage!((m) => {
      const msg = m as Record<string, unknown>;
      if (msg['ready']) proc.send!(Object.fromEntries(Object.entries(targets).map(([k, p]) => [k, p.replace('$WS', ws.dir)])));
      else resolve(msg as Record<string, string>);
    });
  });
  const out = await result;
  await proc.exited;
  await sandbox.releaseWorkspace(ws);
  return { out, ws };
}

t.test('plain process: IPC works and the kill reaches the whole group', async (t) => {
  const sandbox = createProcessSandbox({ bwrap: 'never', network: true });
  t.same(await sandbox.available(), { available: true });
  const { out } = await runProbe(sandbox, { inside: '$WS/in.txt' });
  t.same(out, { inside: 'written' });
  const ws = await sandbox.prepareWorkspace({ jobId: 'k', sourceDir: tmp.dir });
  const pidFile = join(tmp.dir, 'grandchild.pid');
  const proc = await sandbox.spawn({
    workspace: ws,
    argv: ['/bin/sh', '-c', `sleep 3600 & echo $! > ${pidFile}; wait`],
    env,
    cwd: ws.dir,
  });
  // Bounded polls, far beyond what a busy machine takes: the pid once the shell has written it,
  // then the grandchild's end (a SIGKILLed process still has to be scheduled to exit).
  const pidText = async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim();
  for (const until = Date.now() + 60_000; !/^\d+$/.test(await pidText()) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
  const grandchild = Number(await pidText());
  t.ok(grandchild > 1, `the grandchild's pid (${grandchild})`);
  await sandbox.kill(proc, { graceMs: 500 });
  // Gone, or a zombie nobody reaped yet (pid 1 of a container may not reap).
  const alive = async () => {
    const state = await readFile(`/proc/${grandchild}/status`, 'utf8').then((s) => /State:\s+(\S)/.exec(s)?.[1], () => undefined);
    return state !== undefined && state !== 'Z';
  };
  for (const until = Date.now() + 60_000; (await alive()) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
  t.notOk(await alive(), 'the grandchild died with the group');
  await sandbox.releaseWorkspace(ws);
});

const bwrap = await findExecutable('bwrap');
t.test('bwrap: a process job cannot write outside its workspace', { skip: bwrap === null ? 'bwrap is not installed (apt-get install bubblewrap)' : false }, async (t) => {
  const sandbox = createProcessSandbox({ bwrap: 'always', network: false });
  t.ok(await sandbox.confined());
  // Outside /tmp (which bwrap replaces with a private tmpfs): a real host directory.
  const outsideDir = await mkdtemp(join('/var/tmp', 'svc-outside-'));
  t.teardown(() => rm(outsideDir, { recursive: true, force: true }));
  const { out } = await runProbe(sandbox, { inside: '$WS/in.txt', outside: join(outsideDir, 'escape.txt'), etc: '/etc/svc-escape', tmp: '/tmp/svc-escape-probe' });
  t.equal(out['inside'], 'written');
  t.equal(out['outside'], 'EROFS', 'a host directory is read-only');
  t.equal(out['etc'], 'EROFS');
  t.equal(out['tmp'], 'written', '/tmp is a private tmpfs');
  t.notOk(await access(join(outsideDir, 'escape.txt')).then(() => true, () => false), 'nothing appeared outside');
  t.notOk(await access('/tmp/svc-escape-probe').then(() => true, () => false), 'the private /tmp did not reach the host');
});

t.test('bwrap always without bwrap installed: unavailable, naming it', async (t) => {
  const sandbox = createProcessSandbox({ bwrap: 'always', network: true });
  const saved = process.env['PATH'];
  process.env['PATH'] = '/nonexistent';
  try {
    const fresh = createProcessSandbox({ bwrap: 'always', network: true });
    const a = await fresh.available();
    t.equal(a.available, false);
    if (!a.available) t.equal(a.missing, 'bwrap');
  } finally {
    process.env['PATH'] = saved;
  }
  void sandbox;
  await writeFile(join(tmp.dir, 'noop'), '');
});
