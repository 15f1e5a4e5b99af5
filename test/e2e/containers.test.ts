// The system as containers (issue 40): the repository's Containerfile built with real podman on
// a base made here (scripts/container-base.ts: debootstrap, this checkout's Node 24), then
// svc-relay, svc-orchestrator and svc-agent as containers of that image on the host's network,
// the orchestrator on this machine's PostgreSQL. A git push (a bare repository served by
// `git daemon`, its post-receive hook posting to the relay's webhook) becomes a green run whose
// job ran inside the agent's container: the step prints its hostname, its cgroup and its PID 1,
// and the test compares them with the container podman reports. Also: the image (non-root, Node
// 24, no dev dependency or build tool, the CA secret absent, the health check), stdout as JSON
// lines, `podman stop` (SIGTERM) ending each program with exit 0 and a `stopped` line, and the
// orchestrator's one-line refusal of an unreachable database. Prints the image size and each
// container's start-to-ready time.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createDatabase, sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../fixtures/db.ts';
import { buildImage, freePort, podman, poll, readyAfter, runContainer, runOnce, stdoutLines, stillRunning } from '../fixtures/containers.ts';
import { createGitRemote, gitEnv } from '../fixtures/git-repos.ts';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';

t.setTimeout(1_800_000);

const ORG = 'acme';
const REPOSITORY = 'acme/app';

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

export default workflow('where', {
  on: push({ branches: ['main'] }),
  jobs: {
    where: job({
      runsOn: 'container',
      steps: (s) => s.step('where', async () => {
        console.log('WHERE hostname=' + hostname());
        console.log('WHERE uid=' + String(process.getuid?.()));
        console.log('WHERE pid1=' + readFileSync('/proc/1/cmdline', 'utf8').split('\\0').join(' ').trim());
        console.log('WHERE cgroup=' + readFileSync('/proc/self/cgroup', 'utf8').trim().split('\\n').join('|'));
      }),
    }),
  },
});
`;

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const built = await buildImage(t);
t.comment(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
t.comment(`base ${built.base}: ${built.baseBuilt ? `built in ${built.baseMs} ms` : 'present'}; image ${built.image} built in ${built.buildMs} ms; size ${mb(built.sizeBytes)}`);

let runs = 0;
const run = (args: string[], env: Record<string, string> = {}) => runOnce(t, `svc-e2e-once-${process.pid}-${(runs += 1)}`, built.image, args, env);

/** The lock file's packages that only dev dependencies need (`"dev": true`): none may be in the image. */
function devOnlyPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  return Object.entries(lock.packages).filter(([path, p]) => path !== '' && p.dev === true).map(([path]) => path);
}

/** Every package directory under /app/node_modules in the image, as lock-file paths. */
const LIST_PACKAGES = `const fs = require('node:fs'); const out = [];
function walk(dir) { for (const name of fs.readdirSync('/app/' + dir)) {
  if (name.startsWith('.')) continue;
  if (name.startsWith('@')) { for (const sub of fs.readdirSync('/app/' + dir + '/' + name)) visit(dir + '/' + name + '/' + sub); } else visit(dir + '/' + name);
} }
function visit(p) { out.push(p); if (fs.existsSync('/app/' + p + '/node_modules')) walk(p + '/node_modules'); }
walk('node_modules'); console.log(JSON.stringify(out));`;

t.test('the image: non-root, Node 24, health check, no dev dependency, build tool or CA secret', async (t) => {
  const config = JSON.parse((await podman(['image', 'inspect', '--format', '{{json .Config}}', built.image])).stdout) as { User?: string };
  t.equal(config.User, '10001:10001', 'runs as uid 10001');
  const health = JSON.parse((await podman(['image', 'inspect', '--format', '{{json .HealthCheck}}', built.image])).stdout) as { Test?: string[] } | null;
  t.same(health?.Test, ['CMD', 'node', '/app/healthcheck.mjs'], 'the health check is kept (docker format)');
  const inside = await run(['sh', '-c', [
    'id -u', 'node --version',
    'for b in gcc cc make g++ python3 tsc; do command -v $b >/dev/null && echo "build tool $b"; done',
    'test -e /run/secrets/ca && echo "ca secret present"',
    'command -v git >/dev/null || echo "no git"',
    'for b in svc svc-admin svc-orchestrator svc-relay svc-agent; do command -v $b >/dev/null || echo "no $b"; done',
    'true',
  ].join('; ')]);
  t.equal(inside.exitCode, 0, `the checks ran in the image ${inside.stderr}`);
  const [uid, node, ...problems] = inside.stdout.trim().split('\n');
  t.equal(uid, '10001', 'not root');
  t.match(node, /^v24\./, `Node 24 (${node})`);
  t.same(problems, [], 'no build tool, no CA secret; git and the five bins present');
  const listed = await run(['node', '-e', LIST_PACKAGES]);
  t.equal(listed.exitCode, 0, `the packages were listed ${listed.stderr}`);
  const present = new Set(JSON.parse(listed.stdout) as string[]);
  const devOnly = devOnlyPackages();
  t.ok(devOnly.length > 100 && present.size > 100, `${present.size} packages in the image; ${devOnly.length} in the lock file are for dev dependencies only`);
  t.same(devOnly.filter((p) => present.has(p)), [], 'none of the dev-only packages is in the image');
  for (const p of ['node_modules/typescript', 'node_modules/tap', 'node_modules/esbuild', 'node_modules/node']) t.notOk(present.has(p), `${p} is not in the image`);
  const version = await run(['svc', '--version']);
  t.equal(version.exitCode, 0, `svc --version ${version.stderr}`);
  t.match(version.stdout, /^svc\/0\.9\.0 /, `a CLI runs from the image: ${version.stdout.trim()}`);
});

t.test('the orchestrator refuses an unreachable database with one line', async (t) => {
  const refused = await run(['svc-orchestrator'], { SVC_DATABASE_URL: 'postgres://svc@127.0.0.1:1/svc', SVC_SECRET_KEY: randomBytes(32).toString('base64') });
  t.equal(refused.exitCode, 1, 'exit 1');
  t.equal(refused.stdout, '', 'nothing on stdout');
  const lines = refused.stderr.split('\n').filter(Boolean);
  t.equal(lines.length, 1, `one line on stderr:\n${refused.stderr}`);
  t.match(lines[0], /^svc-orchestrator: SVC_ERR_DB_UNAVAILABLE: cannot connect to PostgreSQL at postgres:\/\/svc@127\.0\.0\.1:1\/svc: .*ECONNREFUSED.*SVC_DATABASE_URL/);
  t.notMatch(refused.stderr, /\n\s+at /, 'no stack trace');
});

await eachDatabase(t, async (t, db) => {
  const tag = `${db.kind}-${process.pid}`;
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-containers-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const hostEnv: NodeJS.ProcessEnv = { ...gitEnv(), SVC_SERVER_LOG_LEVEL: 'warn' };
  for (const k of Object.keys(hostEnv)) if (k.startsWith('SVC_') && k !== 'SVC_SERVER_LOG_LEVEL') delete hostEnv[k];
  const admin = async (bin: string, args: string[], env: NodeJS.ProcessEnv) => {
    const out = await runProgram(join(REPO_ROOT, `bin/${bin}.ts`), args, { env: { ...hostEnv, ...env }, timeoutMs: 60_000 });
    if (out.code !== 0) throw new Error(`${bin} ${args.join(' ')}: ${out.stderr}`);
    return out.stdout;
  };

  // The repository, served over git:// so the containers fetch it as from any git server.
  const remote = await createGitRemote(t);
  await chmod(remote.root, 0o755);
  const gitPort = await freePort();
  const daemon = spawn('git', ['daemon', '--reuseaddr', '--export-all', `--base-path=${remote.root}`, '--listen=127.0.0.1', `--port=${gitPort}`, remote.root], { env: gitEnv(), stdio: 'ignore' });
  t.teardown(() => void daemon.kill('SIGTERM'));
  const remoteUrl = `git://127.0.0.1:${gitPort}/server.git`;
  await poll('git daemon to listen', () => new Promise<true | undefined>((resolve) => {
    const socket = connect(gitPort, '127.0.0.1', () => (socket.end(), resolve(true))).once('error', () => resolve(undefined));
  }), 30_000);

  const startTimes: Record<string, number> = {};
  const start = async (role: string, env: Record<string, string>, extra: string[] = []) => {
    startTimes[role] = Date.now();
    return runContainer(t, { name: `svc-e2e-${role}-${tag}`, image: built.image, env, command: [`svc-${role}`], extra });
  };
  const ready: Record<string, number> = {};

  // Relay.
  const relayDb = await db.extraDatabase();
  const relayPort = await freePort();
  const relayUrl = `http://127.0.0.1:${relayPort}`;
  const relayEnv = { SVC_RELAY_DATABASE_URL: relayDb, SVC_RELAY_PORT: String(relayPort), SVC_RELAY_HOST: '127.0.0.1' };
  const relay = await start('relay', relayEnv);
  ready['relay'] = await readyAfter('svc-relay', `${relayUrl}/healthz`, startTimes['relay']!, relay);
  const platformToken = (JSON.parse(await admin('svc-admin', ['relay', 'org', 'create', ORG, '--json'], relayEnv)) as { token: string }).token;

  // Orchestrator: its source and agent token first (the source is announced to the relay on connect).
  const orchPort = await freePort();
  const orchUrl = `http://127.0.0.1:${orchPort}`;
  const orchEnv = {
    SVC_DATABASE_URL: db.url,
    SVC_SECRET_KEY: randomBytes(32).toString('base64'),
    SVC_SERVER_PORT: String(orchPort),
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_PLATFORM_URL: relayUrl,
    SVC_PLATFORM_TOKEN: platformToken,
    SVC_INSTANCE_ID: `e2e-containers-${db.kind}`,
  };
  const source = JSON.parse(await admin('svc-admin', ['source', 'add', 'git', '--org', ORG, '--setting', `remoteUrl=${remoteUrl}`, '--setting', `repository=${REPOSITORY}`, '--json'], orchEnv)) as { source: { id: string }; secret: string; webhookUrl: string };
  t.match(source.webhookUrl, relayUrl, 'the webhook goes to the relay');
  const secretFile = join(root, 'hook.secret');
  await writeFile(secretFile, source.secret, { mode: 0o600 });
  await admin('svc', ['hook', 'post-receive', '--install', remote.bare, '--webhook-url', source.webhookUrl, '--secret-file', secretFile, '--source-id', source.source.id, '--repository', REPOSITORY, '--remote-url', remoteUrl], {});
  const agentToken = (JSON.parse(await admin('svc-admin', ['agent-token', 'create', '--description', 'container', '--json'], orchEnv)) as { token: string }).token;
  const orchestrator = await start('orchestrator', orchEnv);
  ready['orchestrator'] = await readyAfter('svc-orchestrator', `${orchUrl}/healthz`, startTimes['orchestrator']!, orchestrator);
  const relayPool = await createDatabase({ url: relayDb, logger: testLogger, maxPoolSize: 1 });
  t.teardown(() => relayPool.end());
  await poll('the relay to route the git source', async () => ((await relayPool.maybeOne(sql.unsafe`select 1 as one from relay_sources where org_id = ${ORG} and routing_key = ${`git:${source.source.id}`}`)) === null ? undefined : true), 60_000, 100);

  // Agent, with a hostname of its own to be recognised by.
  const agentHost = `svc-e2e-agent-${tag}`;
  const agent = await start('agent', { SVC_ORCHESTRATOR_URL: orchUrl, SVC_AGENT_TOKEN: agentToken, SVC_AGENT_LABELS: 'container', SVC_AGENT_SANDBOX: 'process', SVC_AGENT_ID: agentHost }, ['--hostname', agentHost]);
  await poll('the agent container to be ready', async () => {
    stillRunning('svc-agent', agent);
    return /^svc-agent ready /m.test(agent.stdout()) ? true : undefined;
  }, 120_000);
  ready['agent'] = Date.now() - startTimes['agent']!;
  t.comment(`start to ready: relay ${ready['relay']} ms, orchestrator ${ready['orchestrator']} ms, agent ${ready['agent']} ms (GET /healthz answering 200; the agent: its ready line)`);

  await t.test('the health check of each container passes', async (t) => {
    // The image's HEALTHCHECK command (checked above), run the way podman's timer would run it.
    for (const [c, says] of [[relay, /svc-relay: GET http:\/\/127\.0\.0\.1:\d+\/healthz answered 200/], [orchestrator, /svc-orchestrator: GET http:\/\/127\.0\.0\.1:\d+\/healthz answered 200/], [agent, /svc-agent \(pid \d+\) is running/]] as const) {
      const health = await podman(['exec', c.name, 'node', '/app/healthcheck.mjs'], { reject: false });
      t.equal(health.exitCode, 0, `${c.name}: ${health.all}`);
      t.match(health.stdout, says, `${c.name}: ${health.stdout}`);
    }
    const nobody = await freePort();
    const down = await podman(['exec', '--env', `SVC_HEALTHCHECK_URL=http://127.0.0.1:${nobody}/healthz`, relay.name, 'node', '/app/healthcheck.mjs'], { reject: false });
    t.equal(down.exitCode, 1, 'a server that does not answer is unhealthy');
    t.match(down.stderr, new RegExp(`^healthcheck: svc-relay: GET http://127\\.0\\.0\\.1:${nobody}/healthz failed: .*ECONNREFUSED.*$`), `one line says why: ${down.stderr}`);
  });

  await t.test('a push through the relay\'s webhook becomes a green run, its job run in the agent\'s container', async (t) => {
    await mkdir(join(remote.work, '.svc/workflows'), { recursive: true });
    await writeFile(join(remote.work, '.svc/workflows/where.ts'), WORKFLOW);
    const compiled = await runProgram(join(REPO_ROOT, 'bin/svc.ts'), ['compile'], { env: hostEnv, cwd: remote.work, timeoutMs: 60_000 });
    t.equal(compiled.code, 0, `svc compile ${compiled.stderr}`);
    await remote.git(['add', '--all']);
    await remote.git(['commit', '--quiet', '-m', 'where']);
    const sha = (await remote.git(['rev-parse', 'HEAD'])).trim();
    const pushed = await remote.push();
    t.notMatch(pushed.stderr, /NOT delivered/, 'the hook delivered the push');
    const runRow = await poll('the run to end', async () => {
      const row = (await db.pool.maybeOne(sql.unsafe`select id::text as id, status from runs where sha = ${sha} and parent_run_id is null`)) as { id: string; status: string } | null;
      return row !== null && ['completed', 'failed', 'cancelled', 'skipped'].includes(row.status) ? row : undefined;
    }, 180_000, 200);
    const jobs = (await db.pool.any(sql.unsafe`select id::text as id, name, kind, status, reason, agent_id from jobs where run_id = ${runRow.id} order by created_at`)) as unknown as Array<{ id: string; name: string; kind: string; status: string; reason: string | null; agent_id: string | null }>;
    t.equal(runRow.status, 'completed', jobs.map((j) => `${j.name} ${j.kind} ${j.status} ${j.reason ?? ''}`).join('\n'));
    const where = jobs.find((j) => j.name === 'where');
    t.equal(where?.status, 'completed', 'the job completed');
    t.equal(where?.agent_id, agentHost, 'the agent in the container took it');
    const logRows = (await db.pool.any(sql.unsafe`select lines from job_logs where job_id = ${where?.id ?? ''} order by seq`)) as unknown as Array<{ lines: Array<{ text: string }> }>;
    const log = logRows.flatMap((r) => r.lines.map((l) => l.text)).join('\n');
    const field = (name: string) => new RegExp(`WHERE ${name}=(.*)`).exec(log)?.[1]?.trim();
    const [info] = JSON.parse((await podman(['container', 'inspect', agent.name])).stdout) as Array<{ Id: string; Config: { Hostname: string } }>;
    if (info === undefined) throw new Error(`podman knows no container ${agent.name}`);
    t.equal(field('hostname'), agentHost, 'the step ran under the container\'s hostname');
    t.equal(info.Config.Hostname, agentHost, 'podman says the same');
    t.equal(field('uid'), '10001', 'as the image\'s unprivileged user');
    t.match(field('pid1') ?? '', /svc-agent/, 'in the container\'s PID namespace: its PID 1 is the container\'s init running svc-agent');
    const cgroup = field('cgroup') ?? '';
    if (/^0::\/$/.test(cgroup)) t.comment('cgroup namespace private: the cgroup path names no container');
    else t.match(cgroup, info.Id, 'in the container\'s cgroup');
  });

  await t.test('SIGTERM (podman stop) ends each program cleanly; stdout is JSON lines', async (t) => {
    for (const [program, c] of [['svc-agent', agent], ['svc-orchestrator', orchestrator], ['svc-relay', relay]] as const) {
      const code = await c.stop(30);
      t.equal(code, 0, `${program} exited 0 after SIGTERM\n${c.stderr()}`);
      const lines = stdoutLines(program, c.stdout());
      t.equal(lines.readyLines, 1, `${program}: one ready line`);
      t.same(lines.other, [], `${program}: every other stdout line is JSON`);
      t.ok(lines.json.every((l) => l['name'] === program && typeof l['level'] === 'number' && typeof l['time'] === 'number' && typeof l['msg'] === 'string'), `${program}: pino lines (name, level, time, msg)`);
      const stopping = lines.json.find((l) => l['msg'] === 'stopping');
      const stopped = lines.json.find((l) => l['msg'] === 'stopped');
      t.equal(stopping?.['signal'], 'SIGTERM', `${program}: logged stopping on SIGTERM`);
      t.equal(typeof stopped?.['ms'], 'number', `${program}: logged stopped (${String(stopped?.['ms'])} ms)`);
      t.equal(c.stderr(), '', `${program}: nothing on stderr`);
    }
  });
});
