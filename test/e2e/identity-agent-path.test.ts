// End to end through the agent path, per custody kind (db, aws-kms against the fake KMS, command
// with the signer script): a REAL orchestrator (identity + dispatch + scheduling, real PostgreSQL)
// with an issuer that has a path, a REAL agent (startAgent, process sandbox, real step runner) and
// a real workflow checked out from a real git repository. Its step calls
// `ctx.svc.oidc.token({ audience })` and POSTs the token (never logging it) to a receiver on
// loopback. Each received token is verified in SEPARATE processes that discover keys from the
// issuer (openid-client + jose; PyJWT when installed) and its claims are checked against the
// spec's Identity token table for a push run, a same-repository pull request and a fork pull
// request. The token must never reach the job's stored logs.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { pino } from 'pino';
import t from 'tap';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../agent/agent.ts';
import { parseAgentEnv } from '../../agent/env.ts';
import { workflowToLockEntry } from '../../workflow/compile/lock-entry.ts';
import { registerSdkResolution } from '../../workflow/sdk-resolution.ts';
import { adminAuthSubsystem } from '../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../kernel/orchestrator/dispatch/index.ts';
import { identityServiceRef } from '../../kernel/orchestrator/service-refs.ts';
import { identitySubsystem } from '../../kernel/orchestrator/identity/subsystem.ts';
import type { RunPlan } from '../../kernel/orchestrator/runs/create.ts';
import { createSchedulingSubsystem } from '../../kernel/orchestrator/scheduling/index.ts';
import { sql, type DatabasePool } from '../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { createProcessSandbox } from '../../plugins/sandboxes/process/index.ts';
import type { NormalizedEvent } from '../../schemas/event.ts';
import type { LockWorkflow } from '../../schemas/lock.ts';
import { gitRepo, makeTree, tempDir } from '../agent/fixtures/trees.ts';
import { eachDatabase, inCi, testLogger, type Test } from '../fixtures/db.ts';
import { startKmsServer } from '../fixtures/kms-server.ts';
import { until } from '../fixtures/runs.ts';
import { FAST } from '../kernel/orchestrator/dispatch/harness.ts';
import { byName, createTestRun, jobsOf, runOf } from '../kernel/orchestrator/scheduling/harness.ts';

t.setTimeout(1_200_000);

const NODE_VERIFIER = fileURLToPath(new URL('../kernel/orchestrator/identity/verifier-child.ts', import.meta.url));
const PY_VERIFIER = fileURLToPath(new URL('../kernel/orchestrator/identity/verifier-child.py', import.meta.url));
const SIGNER = fileURLToPath(new URL('../fixtures/signer-command.mjs', import.meta.url));
const PYTHON = '/usr/bin/python3';
const AUDIENCE = 'https://verifier.test';
const REPO = 'acme/widgets';

const pythonJwt = await execa(PYTHON, ['-c', 'import jwt, cryptography'], { reject: false });
const pythonSkip = pythonJwt.exitCode === 0 ? false : 'python3-jwt is not installed (apt-get install -y python3-jwt)';
if (pythonSkip && inCi) throw new Error(`CI needs ${pythonSkip}`);

// The receiver: the step POSTs the token here; the test takes what arrived after each run.
const received: string[] = [];
const receiver: Server = createHttpServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/token') {
      received.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(204).end();
    } else res.writeHead(404).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
const RECEIVER_URL = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/token`;

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  jobs: {
    mint: job({
      runsOn: 'linux',
      steps: (s) => s.step('token', async (ctx) => {
        const result = await ctx.svc.oidc.token({ audience: ${JSON.stringify(AUDIENCE)} });
        if (!('token' in result)) throw new Error('identity token deferred: ' + result.code);
        const response = await fetch(${JSON.stringify(RECEIVER_URL)}, { method: 'POST', body: result.token });
        if (response.status !== 204) throw new Error('receiver answered ' + response.status);
        ctx.log.info('token delivered, expires in ' + result.expiresIn + ' s');
        return {};
      }),
    }),
  },
});
`;

const tmp = await tempDir('svc-identity-agent-e2e-');
t.teardown(tmp.cleanup);
const tree = await makeTree(join(tmp.dir, 'repo'), { '.svc/workflows/ci.ts': WORKFLOW });
const SHA = await gitRepo(tree.dir);
registerSdkResolution();
const mod = (await import(pathToFileURL(join(tree.dir, '.svc/workflows/ci.ts')).href)) as { default: unknown };
const ENTRY: LockWorkflow = workflowToLockEntry(mod.default, { sourcePath: '.svc/workflows/ci.ts', exportName: 'default', contentHash: tree.contentHash });

const kms = await startKmsServer();
t.teardown(() => kms.stop());

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

type Verified = { ok: boolean; claims?: Record<string, unknown>; header?: Record<string, unknown>; error?: string };

async function verifyIn(program: 'node' | 'python', issuer: string, token: string): Promise<Verified> {
  const result =
    program === 'node'
      ? await execa(process.execPath, [NODE_VERIFIER, issuer, AUDIENCE, token], { timeout: 30_000 })
      : await execa(PYTHON, [PY_VERIFIER, issuer, AUDIENCE, token], { timeout: 30_000 });
  return JSON.parse(result.stdout) as Verified;
}

function eventOf(kind: 'push' | 'pr', headRepository = REPO): NormalizedEvent {
  const base = {
    provider: 'github',
    repository: { fullName: REPO, owner: 'acme', name: 'widgets', id: '1', cloneUrl: `file://${tree.dir}`, defaultBranch: 'main' },
    ref: 'refs/heads/main',
    sha: SHA,
  };
  return (kind === 'push' ? { ...base, eventName: 'push' } : { ...base, eventName: 'pull_request:opened', pullRequest: { headRepository } }) as unknown as NormalizedEvent;
}

interface Scenario {
  name: string;
  plan: Partial<RunPlan>;
  sub: string;
  claims: Record<string, unknown>;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'push run',
    plan: { eventName: 'push', subjectKind: 'ref', actor: 'alice', trustTier: 'trusted', isFork: 'false', headRef: '', headRepository: '', event: eventOf('push') },
    sub: `repo:${REPO}:ref:refs/heads/main:workflow:ci`,
    claims: { event_name: 'push', is_fork: 'false', head_ref: '', head_repository: '', trust_tier: 'trusted', actor: 'alice' },
  },
  {
    name: 'same-repository pull request',
    plan: { eventName: 'pull_request:opened', subjectKind: 'pull_request', actor: 'alice', trustTier: 'trusted', isFork: 'false', headRef: 'feature-x', headRepository: REPO, event: eventOf('pr') },
    sub: `repo:${REPO}:pull_request`,
    claims: { event_name: 'pull_request:opened', is_fork: 'false', head_ref: 'feature-x', head_repository: REPO, trust_tier: 'trusted', actor: 'alice' },
  },
  {
    name: 'fork pull request',
    plan: { eventName: 'pull_request:opened', subjectKind: 'pull_request', actor: 'mallory', trustTier: 'unknown', isFork: 'true', headRef: 'evil', headRepository: 'mallory/widgets', event: eventOf('pr', 'mallory/widgets') },
    sub: `repo:${REPO}:pull_request`,
    claims: { event_name: 'pull_request:opened', is_fork: 'true', head_ref: 'evil', head_repository: 'mallory/widgets', trust_tier: 'unknown', actor: 'mallory' },
  },
];

async function jobLogText(pool: DatabasePool, jobId: string): Promise<string> {
  const rows = (await pool.any(sql.unsafe`SELECT lines FROM job_logs WHERE job_id = ${jobId} ORDER BY seq`)) as unknown as Array<{ lines: Array<{ step: string; text: string }> }>;
  return rows.flatMap((r) => r.lines.map((l) => `${l.step}|${l.text}`)).join('\n');
}

/** Orchestrator (issuer with a path, the given custody) and a real agent, torn down with `t`. */
async function startStack(t: Test, dbUrl: string, kind: string, custodyEnv: Record<string, string>, masterKey: string): Promise<{ pool: DatabasePool; issuer: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), `svc-identity-agent-${kind}-`));
  const port = await freePort();
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_SERVER_PORT: String(port),
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: masterKey,
      SVC_AGENT_AUTH: 'none',
      SVC_ORCHESTRATOR_PROVENANCE_ISSUER: `http://127.0.0.1:${port}/tenant-a`,
      ...custodyEnv,
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems: [adminAuthSubsystem, identitySubsystem, createDispatchSubsystem(FAST), createSchedulingSubsystem({ sweepMs: 100 })],
  });
  // The issuer's path is not where the server's routes live, so the public URL is the server's
  // own address (not the issuer) and agents connect there.
  t.equal(orch.url, `http://127.0.0.1:${port}`, 'public URL: the server address, not the path issuer');
  const agent = await startAgent({
    settings: parseAgentEnv({ SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: join(dataDir, 'agent'), SVC_AGENT_LABELS: 'linux', SVC_AGENT_MAX_RECONNECT_DELAY_MS: '1000' }),
    agentId: `identity-agent-${kind}`,
    logger: pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' }),
    sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'never', network: true })]]),
    runnerPath: DEFAULT_RUNNER_PATH,
  });
  t.teardown(async () => {
    await agent.stop();
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const service = orch.get(identityServiceRef);
  if (service === undefined) throw new Error('identity service did not start');
  return { pool: orch.ctx.db, issuer: service.issuer };
}

await eachDatabase(t, async (t, db) => {
  const masterKey = randomBytes(32).toString('base64');
  const CUSTODY: Array<[string, Record<string, string>]> = [
    ['db', { SVC_ORCHESTRATOR_SIGNER_KIND: 'db' }],
    [
      'aws-kms',
      {
        SVC_ORCHESTRATOR_SIGNER_KIND: 'aws-kms',
        SVC_ORCHESTRATOR_KMS_KEY_ARN: kms.keyArn,
        SVC_ORCHESTRATOR_KMS_REGION: 'us-east-1',
        SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID: kms.accessKeyId,
        SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY: kms.secretAccessKey,
        SVC_ORCHESTRATOR_KMS_ENDPOINT: kms.url,
      },
    ],
    ['command', { SVC_ORCHESTRATOR_SIGNER_KIND: 'command', SVC_ORCHESTRATOR_SIGNER_COMMAND: `${process.execPath} ${SIGNER} ${join(tmp.dir, `cmd-key-${db.kind}.json`)}` }],
  ];

  for (const [kind, custodyEnv] of CUSTODY) {
    await t.test(`${kind} custody: tokens minted by a real step through the real agent verify independently`, async (t) => {
      const { pool, issuer } = await startStack(t, db.url, kind, custodyEnv, masterKey);
      t.match(issuer, /^http:\/\/127\.0\.0\.1:\d+\/tenant-a$/, 'the issuer has a path');

      for (const scenario of SCENARIOS) {
        await t.test(scenario.name, async (t) => {
          received.length = 0;
          const run = await createTestRun(pool, ENTRY, { sha: SHA, workflowSha: SHA, ...scenario.plan });
          const done = await until(`run ${run.runId} finished`, async () => {
            const row = await runOf(pool, run.runId);
            return ['completed', 'failed', 'cancelled', 'skipped'].includes(row.status) ? row : undefined;
          }, 60_000, 100);
          const jobs = byName(await jobsOf(pool, run.runId));
          const job = jobs['mint'];
          if (job === undefined) throw new Error(`no mint job in ${Object.keys(jobs).join(', ')}`);
          const log = await jobLogText(pool, job.id);
          t.equal(done.status, 'completed', `run completed (${job.status} ${job.reason ?? ''})\n${log}`);
          t.match(log, /token\|token delivered, expires in \d+ s/, 'the step ran in the real step runner');
          t.equal(received.length, 1, 'the step delivered exactly one token');
          const token = received[0];
          if (token === undefined) return;

          const stored = (await pool.any(sql.unsafe`SELECT lines::text AS text FROM job_logs WHERE job_id = ${job.id}`)) as unknown as Array<{ text: string }>;
          const [, , signature] = token.split('.');
          for (const row of stored) {
            t.notOk(row.text.includes(token), 'the token is not in the stored logs');
            t.notOk(signature !== undefined && row.text.includes(signature), 'nor its signature');
          }

          const [node, py] = await Promise.all([verifyIn('node', issuer, token), pythonSkip ? Promise.resolve(undefined) : verifyIn('python', issuer, token)]);
          t.ok(node.ok, `openid-client + jose verifier: ${node.error ?? 'ok'}`);
          t.match(node.header, { alg: 'ES256', kid: String }, 'ES256 with a kid');
          const expected = {
            iss: issuer,
            aud: AUDIENCE,
            sub: scenario.sub,
            repository: REPO,
            ref: 'refs/heads/main',
            base_ref: 'refs/heads/main',
            sha: SHA,
            workflow_ref: `ci@${SHA}`,
            workflow_repository: REPO,
            svc_run_id: run.runId,
            svc_job_id: job.id,
            org_id: 'org-1',
            provider: 'github',
            source_origin: 'triggered',
            attestation_origin: 'live',
            statement_hash: null,
            ...scenario.claims,
          };
          const claims = node.claims ?? {};
          for (const [name, value] of Object.entries(expected)) t.same(claims[name], value, `claim ${name}`);
          t.type(claims['orchestrator_id'], 'string');
          t.ok(String(claims['orchestrator_id']).length > 0, 'orchestrator_id is set');
          const lifetime = Number(claims['exp']) - Number(claims['iat']);
          t.ok(lifetime > 0 && lifetime <= 15 * 60, `lifetime about 10 minutes (${lifetime} s)`);
          t.equal(claims['nbf'], claims['iat']);
          t.type(claims['jti'], 'string');

          await t.test('python (PyJWT) verifier', { skip: pythonSkip }, async (t) => {
            t.ok(py?.ok, `PyJWT verifier: ${py?.error ?? 'ok'}`);
            t.same(py?.claims, node.claims, 'PyJWT sees the same claims');
          });
        });
      }
    });
  }
});
