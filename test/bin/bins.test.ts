// Every bin of the package exists and behaves at its edges: help, usage errors, roles not yet
// available, and the refusal to run on a Node older than 24.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';

// Real processes on a 2-core machine shared with other test files: allow for load.
t.setTimeout(600_000);

const bin = (name: string) => join(REPO_ROOT, 'bin', `${name}.ts`);

t.test('svc and svc-admin answer --help with exit 0', async (t) => {
  for (const name of ['svc', 'svc-admin']) {
    const r = await runProgram(bin(name), ['--help']);
    t.equal(r.code, 0, `${name} --help`);
    t.match(r.stdout, new RegExp(`\\$ ${name}`));
  }
});

t.test('an unknown command is a usage error (exit 2)', async (t) => {
  const r = await runProgram(bin('svc-admin'), ['no-such-command']);
  t.equal(r.code, 2);
  t.match(r.stderr, /not found/);
});

t.test('the package declares every bin of interfaces.md, compiled', async (t) => {
  const pkg = JSON.parse(await (await import('node:fs/promises')).readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  t.same(Object.keys(pkg.bin).sort(), ['svc', 'svc-admin', 'svc-agent', 'svc-orchestrator', 'svc-relay']);
  for (const target of Object.values(pkg.bin)) t.match(target, /^dist\/bin\/.+\.js$/);
});

const dist = join(REPO_ROOT, 'dist/bin/svc.js');
const node20 = '/usr/bin/node';
t.test('compiled bins refuse Node < 24 with one clear line', { skip: process.env['CI'] !== 'true' && (!existsSync(dist) || !existsSync(node20)) ? 'needs `npm run build` and a system Node (never skipped in CI)' : false }, async (t) => {
  const version = await runProgram('-e', ['process.stdout.write(process.versions.node)'], { node: node20 });
  if (Number(version.stdout.split('.')[0]) >= 24) {
    t.pass('system Node is already 24+; nothing to refuse');
    return;
  }
  const r = await runProgram(dist, ['--help'], { node: node20 });
  t.equal(r.code, 1);
  t.match(r.stderr, /svc needs Node\.js 24 or newer \(this is v\d+/);
});

t.test('the compiled svc runs under Node 24', { skip: process.env['CI'] !== 'true' && !existsSync(dist) ? 'needs `npm run build` (never skipped in CI)' : false }, async (t) => {
  const r = await runProgram(dist, ['--version']);
  t.equal(r.code, 0);
  t.match(r.stdout, /svc\/0\.9\.0/);
});
