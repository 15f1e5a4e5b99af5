// `svc doctor [--json]`: is this machine and repository ready for svc? Exit 0 when every check
// passes, 1 when any warns, 2 when any fails (spec: Errors). Checks that depend on a failed
// one are skipped.
import { enableCompileCache } from 'node:module';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { messageOf } from '../../core/errors.ts';
import { checkLine, checksExitCode, overallStatus, summaryLine, type Check, type CheckStatus } from '../../core/cli/checks.ts';

export type { CheckStatus } from '../../core/cli/checks.ts';
export type DoctorCheck = Check;
export interface DoctorReport {
  status: 'pass' | 'warn' | 'fail';
  root: string;
  checks: DoctorCheck[];
}

const MIN_NODE_MAJOR = 24;
const SYMLINK_WARNINGS = new Set(['symlink-absolute-target', 'symlink-outside-parent']);

/**
 * `job-env`: the proxy and CA-bundle variables of this shell that jobs would not get under the
 * pass-through policy (SVC_AGENT_PASS_ENV, the same for `svc run --local` and an agent started
 * from this shell): a job's npm, git or curl would then fail where the user's own works.
 */
export async function jobEnvCheck(env: Readonly<Record<string, string | undefined>>): Promise<Check> {
  const { DEFAULT_PASS_ENV, parsePassEnv } = await import('../../agent/env.ts');
  let names: string[];
  try {
    names = parsePassEnv(env['SVC_AGENT_PASS_ENV']);
  } catch (error) {
    return { name: 'job-env', status: 'fail', message: messageOf(error) };
  }
  const policy = new Set(names);
  const set = DEFAULT_PASS_ENV.filter((n) => env[n] !== undefined);
  const dropped = set.filter((n) => !policy.has(n));
  const passed = names.filter((n) => env[n] !== undefined);
  if (dropped.length > 0) {
    return {
      name: 'job-env',
      status: 'warn',
      message: `jobs will not get ${dropped.join(', ')} from this shell (SVC_AGENT_PASS_ENV=${JSON.stringify(env['SVC_AGENT_PASS_ENV'] ?? '')} leaves them out): behind a proxy their npm, git and curl may fail; add them, e.g. SVC_AGENT_PASS_ENV=default`,
    };
  }
  return { name: 'job-env', status: 'pass', message: passed.length === 0 ? 'no proxy or CA-bundle variable in this shell' : `jobs get ${passed.join(', ')} from this shell` };
}

/** Run every check for the repository around `cwd`. */
export async function runDoctor(cwd: string, env: Readonly<Record<string, string | undefined>> = process.env): Promise<DoctorReport> {
  const [{ access, readFile }, { default: path }, { findProjectRoot }, { tryGit }, { compileWorkflows, describeDrift }, { detectLockfile }] = await Promise.all([
    import('node:fs/promises'),
    import('node:path'),
    import('../compiler/project-root.ts'),
    import('../preview/local-git.ts'),
    import('../compiler/compile.ts'),
    import('../../workflow/hash/index.ts'),
  ]);
  const checks: DoctorCheck[] = [];
  const add = (name: string, status: CheckStatus, message: string): void => {
    checks.push({ name, status, message });
  };

  const major = Number(process.versions.node.split('.')[0]);
  add('node', major >= MIN_NODE_MAJOR ? 'pass' : 'fail', major >= MIN_NODE_MAJOR ? `Node ${process.versions.node}` : `Node ${process.versions.node} is too old: install Node ${MIN_NODE_MAJOR} or newer`);

  const gitVersion = await tryGit(cwd, ['--version']);
  add('git', gitVersion !== undefined ? 'pass' : 'fail', gitVersion ?? 'git is not installed or not on PATH: install git (preview and the pre-commit hook use it)');
  if (gitVersion !== undefined) {
    const top = await tryGit(cwd, ['rev-parse', '--show-toplevel']);
    add('repository', top !== undefined ? 'pass' : 'warn', top !== undefined ? `git work tree ${top}` : 'not inside a git work tree: svc preview and svc hook install need one');
  }
  checks.push(await jobEnvCheck(env));

  const { root, found } = findProjectRoot(cwd);
  const skipRest = (reason: string): DoctorReport => {
    for (const name of ['svcignore', 'workflows', 'lock', 'symlinks', 'dependencies']) add(name, 'skip', reason);
    return finish(root, checks);
  };
  if (!found) {
    add('svc-dir', 'fail', `no .svc/ directory in ${root} or above: run \`svc init\``);
    return skipRest('no .svc/ directory');
  }
  add('svc-dir', 'pass', `${path.join(root, '.svc')}`);

  const svcDir = path.join(root, '.svc');
  const hasIgnore = await access(path.join(svcDir, '.svcignore')).then(() => true, () => false);
  add('svcignore', hasIgnore ? 'pass' : 'warn', hasIgnore ? '.svc/.svcignore present' : '.svc/.svcignore is missing: the built-in list applies; write it (svc init does) so the hash inputs are explicit');

  let compiled: Awaited<ReturnType<typeof compileWorkflows>>;
  try {
    compiled = await compileWorkflows({ repoRoot: root, mode: 'memory' });
  } catch (error) {
    add('workflows', 'fail', messageOf(error));
    for (const name of ['lock', 'symlinks', 'dependencies']) add(name, 'skip', 'the workflows do not compile');
    return finish(root, checks);
  }
  const count = compiled.workflows.length;
  add('workflows', count > 0 ? 'pass' : 'warn', count > 0 ? `${count} workflow${count === 1 ? '' : 's'} load and compile (${compiled.workflows.map((w) => w.name).join(', ')})` : 'no workflow files in .svc/workflows: nothing will run');

  const drift = compiled.drift;
  if (drift.upToDate) add('lock', 'pass', `${compiled.lockRelPath} is up to date`);
  else add('lock', 'fail', `${describeDrift(drift, compiled.lockRelPath)}: run \`svc compile\` and commit the lock`);

  const links = compiled.warnings.filter((w) => SYMLINK_WARNINGS.has(w.code));
  const others = compiled.warnings.filter((w) => !SYMLINK_WARNINGS.has(w.code));
  add('symlinks', links.length === 0 ? 'pass' : 'warn', links.length === 0 ? 'no symlink that breaks in other checkouts' : links.map((w) => w.message).join('; '));
  if (others.length > 0) add('hash-warnings', 'warn', others.map((w) => w.message).join('; '));

  const pkgText = await readFile(path.join(svcDir, 'package.json'), 'utf8').catch(() => undefined);
  const lockfile = await detectLockfile(root).catch(() => undefined);
  let deps: string[] = [];
  try {
    const pkg = pkgText === undefined ? {} : (JSON.parse(pkgText) as Record<string, unknown>);
    for (const field of ['dependencies', 'devDependencies', 'optionalDependencies']) {
      const value = pkg[field];
      if (typeof value === 'object' && value !== null) deps.push(...Object.keys(value));
    }
  } catch (error) {
    add('dependencies', 'fail', `.svc/package.json is not valid JSON: ${messageOf(error)}`);
    return finish(root, checks);
  }
  // `svc` itself (editor types) is provided by the agent: it needs no pinned install.
  deps = deps.filter((d) => d !== 'svc');
  if (lockfile !== undefined) add('dependencies', 'pass', `${lockfile.manager} lockfile ${lockfile.path} (lockfileHash ${lockfile.lockfileHash.slice(0, 20)}…)`);
  else if (deps.length > 0) add('dependencies', 'warn', `.svc/package.json depends on ${deps.join(', ')} but there is no lockfile: run \`npm install\` in .svc/ (or use the workspace's pnpm/yarn lockfile) so agents install the same versions`);
  else add('dependencies', 'pass', 'no dependencies to pin');
  return finish(root, checks);
}

function finish(root: string, checks: DoctorCheck[]): DoctorReport {
  return { status: overallStatus(checks), root, checks };
}

export function doctorExitCode(report: DoctorReport): number {
  return checksExitCode(report.status);
}

export default class Doctor extends SvcCommand {
  static override description = 'Check Node, git, the proxy and CA variables jobs get, .svc/, the lock, workflows, symlinks and dependencies; exit 0 all pass, 1 a warning, 2 a failure';

  async run(): Promise<DoctorReport> {
    await this.parse(Doctor);
    enableCompileCache();
    const report = await runDoctor(process.cwd());
    if (!this.jsonEnabled()) {
      for (const c of report.checks) this.log(checkLine(c));
      this.log(summaryLine(report.status));
    }
    process.exitCode = doctorExitCode(report);
    return report;
  }
}
