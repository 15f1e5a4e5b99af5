// bwrap gives the job a fresh /tmp; paths the job must read (Node, the runner's package) are
// bound back read-only, so a checkout of svc under /tmp still runs confined jobs.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import t from 'tap';
import { bwrapArgv } from '../../../plugins/sandboxes/process/bwrap.ts';

const bwrap = await execa('bwrap', ['--version'], { reject: false }).then((r) => (r.exitCode === 0 ? 'bwrap' : null), () => null);

t.test('read paths under /tmp stay visible, read-only', { skip: bwrap === null ? 'bubblewrap is not installed (.ci/run installs it from Debian)' : false }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bwrap-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const work = await mkdtemp(join(tmpdir(), 'svc-bwrap-ws-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const file = join(dir, 'visible.txt');
  await writeFile(file, 'seen\n');
  const run = (readPaths: string[], argv: string[]) =>
    execa(bwrapArgv({ bwrap: 'bwrap', workspace: work, tmpDir: work, network: false, cwd: work, argv, readPaths })[0]!, bwrapArgv({ bwrap: 'bwrap', workspace: work, tmpDir: work, network: false, cwd: work, argv, readPaths }).slice(1), { reject: false });
  const hidden = await run([], ['cat', file]);
  t.not(hidden.exitCode, 0, 'without a read path the fresh /tmp hides it');
  const shown = await run([dir], ['cat', file]);
  t.equal(shown.exitCode, 0, shown.stderr);
  t.equal(shown.stdout, 'seen');
  const write = await run([dir], ['sh', '-c', `echo x > ${join(dir, 'new.txt')}`]);
  t.not(write.exitCode, 0, 'read paths are read-only');
  const missing = await run([join(dir, 'does-not-exist')], ['true']);
  t.equal(missing.exitCode, 0, 'a missing read path is skipped');
});
