// WarmRunners (agent/jobs/warm-runner.ts): one spare while spares finish loading before jobs take
// them; two once a job takes a spare still loading (jobs outran the load). Real processes in the
// process sandbox; the "runner" is a small script that says runner.ready after a delay.
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { WarmRunners } from '../../../agent/jobs/warm-runner.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { tempDir } from '../fixtures/trees.ts';

const tmp = await tempDir('svc-warm-runner-');
t.teardown(tmp.cleanup);
const script = join(tmp.dir, 'slow-ready.mjs');
// Says ready after argv[2] ms (and leaves a `ready` file in its workspace once the message is
// sent), then idles until the agent side kills it.
await writeFile(
  script,
  "import { writeFileSync } from 'node:fs';\nsetTimeout(() => process.send({ type: 'runner.ready', pid: process.pid }, () => writeFileSync('ready', '')), Number(process.argv[2]));\nsetInterval(() => {}, 1000);\n",
);
const sandbox = createProcessSandbox({ bwrap: 'never', network: true });

function runners(name: string, readyAfterMs: number): WarmRunners {
  return new WarmRunners({
    logger: pino({ level: 'silent' }),
    slotsRoot: join(tmp.dir, name),
    sandbox,
    spawn: {
      request: (workspace) => ({ workspace, argv: [process.execPath, script, String(readyAfterMs)], env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, cwd: workspace.dir, ipc: true, readPaths: [process.execPath, tmp.dir] }),
    },
  });
}

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('a spare that loaded before the job took it: one spare is kept', async (t) => {
  const warm = runners('loaded', 0);
  t.teardown(() => warm.close());
  warm.replenish();
  const first = await warm.take();
  if (first === undefined) throw new Error('no spare');
  await sandbox.kill(first.proc, { graceMs: 0 });
  // The second job's spare (slot 1) loads before that job comes.
  warm.replenish();
  await until('the spare loaded', async () => (await readdir(join(tmp.dir, 'loaded', '1', 'src')).catch(() => [] as string[])).includes('ready'));
  // The message left before the file was written; the agent side takes it in on its next turn.
  await until('the agent side heard runner.ready', () => warm.nextLoaded());
  const spare = await warm.take();
  if (spare === undefined) throw new Error('no spare');
  t.equal(warm.depth, 1, 'the spare had loaded when taken: still one spare');
  warm.replenish();
  t.equal(warm.spares, 1, 'one new spare is starting (replenish starts them at once), no second');
  await until('the next spare', async () => (await readdir(join(tmp.dir, 'loaded'))).length === 3);
  t.equal((await readdir(join(tmp.dir, 'loaded'))).length, 3, 'one new spare (taken spares keep their slot directories until their jobs remove them)');
  await sandbox.kill(spare.proc, { graceMs: 0 });
});

t.test('a spare still loading when taken: two spares from then on, each runs one job', async (t) => {
  // Ready after 60 s: far beyond the take, which comes at once.
  const warm = runners('loading', 60_000);
  t.teardown(() => warm.close());
  warm.replenish();
  const zeroth = await warm.take();
  if (zeroth === undefined) throw new Error('no spare');
  t.equal(warm.depth, 1, "the agent's first job: its spare started with the agent, no change");
  await sandbox.kill(zeroth.proc, { graceMs: 0 });
  warm.replenish();
  const first = await warm.take();
  if (first === undefined) throw new Error('no spare');
  t.equal(warm.depth, 2, 'a later job took a spare still loading: two spares from now on');
  warm.replenish();
  // Slots 0 and 1 (the two taken spares' directories stay until their jobs remove them), 2 and 3.
  await until('two more spares', async () => (await readdir(join(tmp.dir, 'loading'))).length === 4);
  const second = await warm.take();
  const third = await warm.take();
  t.ok(second !== undefined && third !== undefined, 'two spares were waiting');
  t.not(second?.proc.pid, third?.proc.pid, 'different processes');
  t.not(first.proc.pid, second?.proc.pid, 'a taken spare is never handed out again');
  t.equal(await warm.take(), undefined, 'none left until the next replenish');
  for (const spare of [first, second, third]) if (spare !== undefined) await sandbox.kill(spare.proc, { graceMs: 0 });
});
