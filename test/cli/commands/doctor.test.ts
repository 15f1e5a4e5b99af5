// `svc doctor` exit codes: 0 when every check passes, 1 on a warning, 2 on a failure.
import { rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { doctorExitCode, runDoctor } from '../../../cli/commands/doctor.ts';
import { commitAll, runSvc, tempRepo, workflowFile, writeFiles } from '../../fixtures/workflow-trees/index.ts';


async function initialized(t: Parameters<typeof tempRepo>[0]): Promise<string> {
  const dir = tempRepo(t, {}, { git: true });
  const init = await runSvc(dir, ['init']);
  if (init.code !== 0) throw new Error(init.stderr);
  commitAll(dir, 'init');
  return dir;
}

t.test('a fresh svc init passes every check (exit 0)', async (t) => {
  const dir = await initialized(t);
  const result = await runSvc(dir, ['doctor']);
  t.equal(result.code, 0, result.stdout + result.stderr);
  t.match(result.stdout, /^pass {2}node/m);
  t.match(result.stdout, /^pass {2}lock {10}\.svc\/svc\.lock\.json is up to date/m);
  t.match(result.stdout, /all checks pass/);
  const json = await runSvc(dir, ['doctor', '--json']);
  t.equal(json.code, 0);
  const report = JSON.parse(json.stdout) as { status: string; checks: { name: string; status: string }[] };
  t.equal(report.status, 'pass');
  t.same(report.checks.map((c) => c.name), ['node', 'git', 'repository', 'job-env', 'svc-dir', 'svcignore', 'workflows', 'lock', 'symlinks', 'dependencies']);
});

t.test('warnings exit 1: no .svcignore, a symlink with an absolute target, unpinned dependencies', async (t) => {
  const dir = await initialized(t);
  rmSync(path.join(dir, '.svc/.svcignore'));
  // the default list applies now; recompile so only the warning remains
  t.equal((await runSvc(dir, ['compile'])).code, 0);
  let report = await runDoctor(dir);
  t.equal(report.checks.find((c) => c.name === 'svcignore')?.status, 'warn');
  t.equal(doctorExitCode(report), 1);
  t.equal((await runSvc(dir, ['doctor'])).code, 1);

  writeFiles(dir, { '.svc/.svcignore': 'node_modules/\ntypes/\n', 'shared/x.json': '{}\n' });
  symlinkSync(path.join(dir, 'shared/x.json'), path.join(dir, '.svc/x.json'));
  writeFiles(dir, { '.svc/package.json': JSON.stringify({ type: 'module', dependencies: { 'left-pad': '^1.0.0' }, devDependencies: { svc: '^0.9.0' } }) });
  t.equal((await runSvc(dir, ['compile'])).code, 0);
  report = await runDoctor(dir);
  t.match(report.checks.find((c) => c.name === 'symlinks'), { status: 'warn', message: /absolute target/ });
  t.match(report.checks.find((c) => c.name === 'dependencies'), { status: 'warn', message: /left-pad.*no lockfile/ });
  t.equal(report.status, 'warn');

  writeFiles(dir, { '.svc/package-lock.json': '{"lockfileVersion":3}\n' });
  t.equal((await runSvc(dir, ['compile'])).code, 0);
  report = await runDoctor(dir);
  t.match(report.checks.find((c) => c.name === 'dependencies'), { status: 'pass', message: /npm lockfile \.svc\/package-lock\.json/ });
});

t.test('failures exit 2: stale lock, broken workflow, no .svc/', async (t) => {
  const dir = await initialized(t);
  writeFiles(dir, { '.svc/workflows/more.ts': workflowFile('more', 'push()') });
  const stale = await runSvc(dir, ['doctor']);
  t.equal(stale.code, 2);
  t.match(stale.stdout, /^fail {2}lock {10}\.svc\/svc\.lock\.json is out of date/m);

  writeFiles(dir, { '.svc/workflows/more.ts': 'export default null;\n' });
  const broken = await runSvc(dir, ['doctor', '--json']);
  t.equal(broken.code, 2);
  const report = JSON.parse(broken.stdout) as { checks: { name: string; status: string; message: string }[] };
  t.match(report.checks.find((c) => c.name === 'workflows'), { status: 'fail', message: /more\.ts.*not a workflow/ });
  t.equal(report.checks.find((c) => c.name === 'lock')?.status, 'skip');

  const none = tempRepo(t, {});
  const missing = await runSvc(none, ['doctor']);
  t.equal(missing.code, 2);
  t.match(missing.stdout, /^fail {2}svc-dir/m);
  t.match(missing.stdout, /^warn {2}repository/m);
});

t.test('job-env: warns when the pass-through policy drops proxy or CA variables this shell has', async (t) => {
  const dir = await initialized(t);
  const shell = { HTTPS_PROXY: 'http://proxy.corp:3128', NODE_EXTRA_CA_CERTS: '/etc/corp-ca.pem', PATH: process.env['PATH'] };
  let report = await runDoctor(dir, shell);
  t.match(report.checks.find((c) => c.name === 'job-env'), { status: 'pass', message: 'jobs get HTTPS_PROXY, NODE_EXTRA_CA_CERTS from this shell' });
  t.equal(report.status, 'pass');

  report = await runDoctor(dir, { ...shell, SVC_AGENT_PASS_ENV: 'default,-NODE_EXTRA_CA_CERTS' });
  t.match(report.checks.find((c) => c.name === 'job-env'), { status: 'warn', message: /^jobs will not get NODE_EXTRA_CA_CERTS from this shell/ });
  t.equal(doctorExitCode(report), 1);

  report = await runDoctor(dir, { PATH: process.env['PATH'] });
  t.match(report.checks.find((c) => c.name === 'job-env'), { status: 'pass', message: 'no proxy or CA-bundle variable in this shell' });

  report = await runDoctor(dir, { ...shell, SVC_AGENT_PASS_ENV: 'default,SVC_AGENT_TOKEN' });
  t.match(report.checks.find((c) => c.name === 'job-env'), { status: 'fail', message: /SVC_AGENT_PASS_ENV names "SVC_AGENT_TOKEN", which cannot be passed/ });

  // The program itself reads the shell it runs in.
  const cli = await runSvc(dir, ['doctor'], { SVC_AGENT_PASS_ENV: 'none', HTTPS_PROXY: 'http://proxy.corp:3128' });
  t.equal(cli.code, 1, cli.stdout + cli.stderr);
  t.match(cli.stdout, /^warn {2}job-env +jobs will not get .*HTTPS_PROXY/m);
});
