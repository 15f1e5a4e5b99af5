// deploy/systemd/: the unit files for the relay, the orchestrator and the agent (docs/systemd.md).
// Each unit is checked by `systemd-analyze verify` (systemd's own parser: unknown keys, values it
// cannot parse, a missing or non-executable ExecStart) and must produce no warning at all, and
// by the hardening policy below. verify needs ExecStart's binary to exist, so the test renders
// each unit into a temporary directory with two path prefixes replaced, line for line (so the
// line numbers in systemd's messages are the source file's): `/usr/local/bin/` → a directory of
// symlinks to the built bins (dist/bin/<bin>.js, as `npm install -g` links them) and `/etc/svc/`
// → a directory holding the example environment files. Drop-ins (<unit>.d/*.conf) are rendered
// beside their unit, where verify reads them. A deliberately broken unit must fail naming the
// file and the directive.
import { execFile } from 'node:child_process';
import { access, constants, copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = join(ROOT, 'deploy/systemd');
const BROKEN = join(ROOT, 'test/fixtures/deploy/broken-systemd');
const ANALYZE = '/usr/bin/systemd-analyze';
const BINS = ['svc-relay', 'svc-orchestrator', 'svc-agent'];

/** What every unit must say (directive → required value, or a pattern). */
const POLICY: Record<string, RegExp> = {
  User: /^svc$/,
  Group: /^svc$/,
  ExecStart: /^\/usr\/local\/bin\/svc-(relay|orchestrator|agent)$/,
  EnvironmentFile: /^\/etc\/svc\/(relay|orchestrator|agent)\.env$/,
  StateDirectory: /^svc-(relay|orchestrator|agent)$/,
  ReadWritePaths: /^\/var\/lib\/svc-(relay|orchestrator|agent)$/,
  Restart: /^on-failure$/,
  ProtectSystem: /^strict$/,
  ProtectHome: /^yes$/,
  PrivateTmp: /^yes$/,
  NoNewPrivileges: /^yes$/,
  CapabilityBoundingSet: /^$/,
  RestrictSUIDSGID: /^yes$/,
  ProtectKernelModules: /^yes$/,
};

/** `Key=value` lines of a unit (last one wins, as systemd reads them), with their line numbers. */
function directives(text: string): Map<string, { value: string; line: number }> {
  const out = new Map<string, { value: string; line: number }>();
  for (const [i, raw] of text.split('\n').entries()) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(raw.trim());
    if (match) out.set(match[1]!, { value: match[2]!, line: i + 1 });
  }
  return out;
}

/** The hardening policy for one unit file: problems name the file and the directive. */
function policyProblems(file: string, text: string): string[] {
  const found = directives(text);
  const problems: string[] = [];
  for (const [key, wanted] of Object.entries(POLICY)) {
    const d = found.get(key);
    if (d === undefined) problems.push(`${file}: ${key}: missing (docs/systemd.md, "Hardening")`);
    else if (!wanted.test(d.value)) problems.push(`${file}:${d.line}: ${key}=${d.value}: must match ${String(wanted)}`);
  }
  const role = /svc-(relay|orchestrator|agent)\.service$/.exec(file)?.[1];
  for (const key of ['ExecStart', 'EnvironmentFile', 'StateDirectory', 'ReadWritePaths']) {
    const d = found.get(key);
    if (role !== undefined && d !== undefined && !d.value.includes(role)) problems.push(`${file}:${d.line}: ${key}=${d.value}: names another program than svc-${role}`);
  }
  if (found.has('DynamicUser') && found.get('DynamicUser')!.value !== 'no') problems.push(`${file}: DynamicUser: the units use the static user svc (docs/systemd.md, "The user")`);
  return problems;
}

/**
 * Renders `units` (and their drop-in folders) into `out` with the test's paths, runs
 * `systemd-analyze verify` on each, and returns every line it printed, as `<source file>:<line>:
 * <directive>: <message>` where systemd gave a line.
 */
async function verify(sourceDir: string, out: string, units: string[]): Promise<string[]> {
  const bin = join(out, 'bin');
  const etc = join(out, 'etc');
  await mkdir(bin, { recursive: true });
  await mkdir(etc, { recursive: true });
  for (const b of BINS) {
    const built = join(ROOT, 'dist/bin', `${b}.js`);
    await access(built, constants.X_OK).catch(() => {
      throw new Error(`${built} is missing or not executable: run npm run build first (ExecStart must name a real program for systemd-analyze verify)`);
    });
    await symlink(built, join(bin, b)).catch(() => undefined);
  }
  for (const env of (await readdir(DIR)).filter((f) => f.endsWith('.env.example'))) await copyFile(join(DIR, env), join(etc, env.replace(/\.example$/, '')));
  const render = (text: string) => text.replace(/\/usr\/local\/bin\//g, `${bin}/`).replace(/\/etc\/svc\//g, `${etc}/`);
  const sources = new Map<string, { file: string; lines: string[] }>();
  for (const unit of units) {
    const text = await readFile(join(sourceDir, unit), 'utf8');
    await writeFile(join(out, unit), render(text));
    sources.set(join(out, unit), { file: unit, lines: text.split('\n') });
    const dropins = join(sourceDir, `${unit}.d`);
    const confs = await readdir(dropins).catch(() => [] as string[]);
    for (const conf of confs.filter((c) => c.endsWith('.conf'))) {
      await mkdir(join(out, `${unit}.d`), { recursive: true });
      const confText = await readFile(join(dropins, conf), 'utf8');
      await writeFile(join(out, `${unit}.d`, conf), render(confText));
      sources.set(join(out, `${unit}.d`, conf), { file: `${unit}.d/${conf}`, lines: confText.split('\n') });
    }
  }
  const problems: string[] = [];
  for (const unit of units) {
    const result = await run(ANALYZE, ['verify', '--man=no', join(out, unit)], { cwd: out, timeout: 60_000 }).then(
      (r) => ({ code: 0, output: r.stdout + r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, output: (e.stdout ?? '') + (e.stderr ?? '') }),
    );
    for (const line of result.output.split('\n').filter((l) => l.trim() !== '')) {
      const located = /^(\/\S+?):(\d+): (.*)$/.exec(line);
      const source = located ? sources.get(located[1]!) : undefined;
      if (located && source) {
        const directive = source.lines[Number(located[2]) - 1]?.trim() ?? '';
        problems.push(`${source.file}:${located[2]}: ${directive}: ${located[3]}`);
      } else if (/^\S+: Command \S+ is not executable/.test(line)) {
        const lines = sources.get(join(out, unit))!.lines;
        const at = lines.findIndex((l) => l.startsWith('ExecStart='));
        problems.push(`${unit}:${at + 1}: ${lines[at]}: the program is not executable (${line.split(out).join('<rendered>')})`);
      } else {
        problems.push(`${unit}: ${line.split(out).join('<rendered>')}`);
      }
    }
    if (result.code !== 0 && !problems.some((p) => p.startsWith(unit))) problems.push(`${unit}: systemd-analyze verify exited ${result.code}`);
  }
  return problems;
}

const units = (await readdir(DIR)).filter((f) => f.endsWith('.service')).sort();

t.test('every unit passes systemd-analyze verify without a warning', async (t) => {
  t.same(units, ['svc-agent.service', 'svc-orchestrator.service', 'svc-relay.service'], 'relay, orchestrator and agent units');
  const out = await mkdtemp(join(tmpdir(), 'svc-systemd-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  const problems = await verify(DIR, out, units);
  t.same(problems, [], 'no output from systemd-analyze verify');
  const dropins = await readdir(join(out, 'svc-agent.service.d')).catch(() => []);
  t.same(dropins, ['podman.conf'], 'the podman drop-in was verified with the agent unit');
  t.comment(`verified ${units.length} units and ${dropins.length} drop-in`);
});

t.test('every unit carries the hardening and runs its own program', async (t) => {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  for (const unit of units) {
    const text = await readFile(join(DIR, unit), 'utf8');
    t.same(policyProblems(unit, text), [], `${unit}: hardening`);
    const program = basename(directives(text).get('ExecStart')!.value);
    t.ok(program in pkg.bin, `${unit}: ExecStart runs ${program}, a bin of the package`);
  }
  const podman = await readFile(join(DIR, 'svc-agent.service.d/podman.conf'), 'utf8');
  t.match(podman, /^NoNewPrivileges=no$/m, 'the podman drop-in is the one place that lifts NoNewPrivileges (newuidmap is setuid)');
});

t.test('a broken unit fails, naming the file and the directive', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'svc-systemd-broken-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  const broken = (await readdir(BROKEN)).filter((f) => f.endsWith('.service'));
  const problems = await verify(BROKEN, out, broken);
  for (const unit of broken) problems.push(...policyProblems(unit, await readFile(join(BROKEN, unit), 'utf8')));
  t.comment(problems.join('\n'));
  const expect = (needle: string) => t.ok(problems.some((p) => p.startsWith('svc-broken.service') && p.includes(needle)), needle);
  expect('Restart=sometimes');
  expect('ProtectSystem=strictest');
  expect("Unknown key 'NoNewPrivilege'");
  expect('NoNewPrivileges: missing');
  expect('ExecStart=/usr/local/bin/svc-nonexistent');
  expect('User=root');
});
