// Provenance from a real step, REAL processes (test/fixtures/jobs-stack.ts: svc-relay,
// svc-orchestrator with an OIDC issuer and db custody, svc-agent in the process sandbox, real
// PostgreSQL, a bare repository with the post-receive hook). A pushed workflow builds two files
// and calls ctx.attestProvenance on them, then uploads them as a run artifact.
//   1. live: the bundles come back as run artifacts (`svc runs download`); the statement is an
//      in-toto Statement v1 with an SLSA provenance v1 predicate naming this run; `svc
//      verify-attestation` accepts each bundle offline (trust root from `svc-admin signing-key
//      export`) and online (the issuer over HTTP); an outside verifier (securesystemslib, Python:
//      test/fixtures/dsse-verify.py) accepts them too; a tampered artifact is refused by all three.
//   2. deferred: with the only key revoked, the step gets `deferred` and the statements are frozen;
//      with the orchestrator down an operator signs one (`svc-admin attestations backfill`, origin
//      offline-backfill); a new orchestrator node signs the other (origin deferred). Both bundles
//      verify, and their tokens carry attestation_origin and the statement_hash the step was given.
// The system-PostgreSQL stack stores on the filesystem, the embedded one on S3 (s3rver).
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, inCi, type Test } from '../fixtures/db.ts';
import { ORG, REPOSITORY, startJobsStack, type JobsStack } from '../fixtures/jobs-stack.ts';
import { startS3Server } from '../fixtures/s3-server.ts';
import { until } from '../fixtures/runs.ts';

t.setTimeout(2_400_000);

const PYTHON = '/usr/bin/python3';
const OUTSIDE_VERIFIER = fileURLToPath(new URL('../fixtures/dsse-verify.py', import.meta.url));
const probe = await execa(PYTHON, ['-c', 'import securesystemslib.signer, cryptography'], { reject: false });
const pythonSkip = probe.exitCode === 0 ? false : 'python3-securesystemslib is not installed (apt-get install -y python3-securesystemslib)';
if (pythonSkip && inCi) throw new Error(`CI needs ${pythonSkip}`);

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';

export default workflow('release', {
  on: push({ branches: ['main'] }),
  jobs: {
    build: job({
      runsOn: 'e2e',
      steps: (s) =>
        s.step('build', async (ctx) => {
          await mkdir('dist', { recursive: true });
          await writeFile('dist/app.tgz', 'app ' + randomBytes(16).toString('hex') + '\\n');
          await writeFile('dist/sbom.json', JSON.stringify({ sbom: randomBytes(8).toString('hex') }) + '\\n');
          const result = await ctx.attestProvenance({ subjects: [{ path: 'dist/app.tgz' }, { path: 'dist/sbom.json' }], predicate: { target: 'linux-x64' } });
          console.log('ATTEST ' + JSON.stringify(result));
          const uploaded = await ctx.artifacts.upload('app', ['dist/app.tgz', 'dist/sbom.json']);
          console.log('UPLOADED ' + uploaded.name);
        }),
    }),
  },
});
`;

interface StepAttestation {
  subject: string;
  sha256: string;
  attestationId: string;
  statementHash: string;
  deferred: boolean;
  code?: string;
  bundlePath?: string;
  artifact?: string;
}
interface StepResult {
  bundlePaths: string[];
  deferred: boolean;
  attestations: StepAttestation[];
}
interface Verdict {
  ok: boolean;
  reason?: string;
  attestationOrigin?: string;
  subject?: { name: string; sha256: string };
  claims?: Record<string, unknown>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const sha256 = async (file: string) => createHash('sha256').update(await readFile(file)).digest('hex');

function statementOf(bundle: { dsseEnvelope: { payload: string } }): Record<string, any> {
  return JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8')) as Record<string, any>;
}

/** The ATTEST line the step logged (its ctx.attestProvenance result). */
async function stepResult(t: Test, stack: JobsStack, runId: string): Promise<StepResult> {
  const out = await stack.svc(['runs', 'logs', runId, '--json']);
  t.equal(out.code, 0, out.stderr);
  const lines = Object.values((JSON.parse(out.stdout) as { logs: Record<string, Array<{ text: string }>> }).logs).flatMap((l) => l.map((x) => x.text));
  const line = lines.find((l) => l.startsWith('ATTEST '));
  if (line === undefined) throw new Error(`the step logged no ATTEST line:\n${lines.join('\n')}`);
  t.ok(lines.includes('UPLOADED app'), 'the files were uploaded as artifact app');
  return JSON.parse(line.slice('ATTEST '.length)) as StepResult;
}

/** svc verify-attestation offline (trust root) and online (issuer), as --json verdicts with exit codes. */
async function svcVerify(stack: JobsStack, artifact: string, bundle: string, trust: { trustRoot: string } | { issuer: string }): Promise<{ code: number | null; verdict: Verdict; stderr: string }> {
  const where = 'trustRoot' in trust ? ['--trust-root', trust.trustRoot] : ['--issuer', trust.issuer];
  const out = await stack.svc(['verify-attestation', artifact, '--bundle', bundle, ...where, '--json']);
  let verdict: Verdict;
  try {
    verdict = JSON.parse(out.stdout) as Verdict;
  } catch {
    throw new Error(`svc verify-attestation printed no verdict (exit ${out.code}): ${out.stdout}\n${out.stderr}`);
  }
  return { code: out.code, verdict, stderr: out.stderr };
}

async function outsideVerify(artifact: string, bundle: string, trust: { trustRoot: string } | { issuer: string }): Promise<{ code: number | undefined; result: { ok: boolean; error?: string; subject?: string; predicateType?: string } }> {
  const where = 'trustRoot' in trust ? ['--trust-root', trust.trustRoot] : ['--issuer', trust.issuer];
  const out = await execa(PYTHON, [OUTSIDE_VERIFIER, artifact, bundle, ...where], { reject: false, timeout: 60_000 });
  return { code: out.exitCode, result: JSON.parse(out.stdout) as { ok: boolean; error?: string } };
}

async function exportTrustRoot(t: Test, stack: JobsStack, file: string): Promise<void> {
  const out = await stack.admin(['signing-key', 'export', '--public', '--out', file]);
  t.equal(out.code, 0, `signing-key export: ${out.stderr}`);
}

// Both storages without a third stack: the system-PostgreSQL stack stores on the filesystem, the
// embedded one on S3 (s3rver over HTTP, pre-signed signatures checked by the fixture).
await eachDatabase(t, async (t, db) => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  let storageEnv: Record<string, string> = {};
  if (db.kind === 'embedded') {
    const s3 = await startS3Server({ bucket: 'svc-provenance-e2e' });
    t.teardown(() => s3.stop());
    storageEnv = s3.env();
    t.comment(`storage: s3 at ${s3.endpoint}`);
  } else {
    t.comment('storage: filesystem');
  }
  const stack = await startJobsStack(t, db, {
    orchestratorEnv: { ...storageEnv, SVC_SERVER_PORT: String(port), SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuer, SVC_ORCHESTRATOR_SIGNER_KIND: 'db' },
  });
  const pat = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', 'alice', '--json']);
  t.equal(pat.code, 0, pat.stderr);
  const login = await stack.svc(['login', '--token', (JSON.parse(pat.stdout) as { token: string }).token, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);
  await stack.startAgent({ SVC_AGENT_ID: 'e2e-provenance-agent' });
  const trustRoot = join(stack.root, 'trust-root.json');

  const download = async (t: Test, runId: string, name: string, dir: string) => {
    const out = await stack.svc(['runs', 'download', runId, name, '--output', dir]);
    t.equal(out.code, 0, `svc runs download ${name}: ${out.stderr}`);
  };

  await t.test('live: a step attests its files; the bundles verify offline, online and with securesystemslib; tampering is refused', async (t) => {
    const sha = await stack.pushWorkflow({ '.svc/workflows/release.ts': WORKFLOW }, 'release workflow');
    const run = await stack.waitForRun(sha, 300_000);
    const jobs = await stack.jobsOf(run.id);
    t.equal(run.status, 'completed', jobs.map((j) => `${j.display_name} ${j.status} ${j.reason ?? ''}`).join('\n'));
    const build = jobs.find((j) => j.name === 'build');
    const result = await stepResult(t, stack, run.id);
    t.same(result.bundlePaths, ['dist/app.tgz.svc.json', 'dist/sbom.json.svc.json'], 'bundles next to the subjects, as the step named them');
    t.equal(result.deferred, false);
    t.match(result.attestations, [
      { subject: 'dist/app.tgz', deferred: false, bundlePath: 'dist/app.tgz.svc.json', artifact: 'app.tgz.svc.json' },
      { subject: 'dist/sbom.json', deferred: false, bundlePath: 'dist/sbom.json.svc.json', artifact: 'sbom.json.svc.json' },
    ]);

    const out = join(stack.root, 'live');
    for (const name of ['app', 'app.tgz.svc.json', 'sbom.json.svc.json']) await download(t, run.id, name, out);
    const artifact = join(out, 'dist', 'app.tgz');
    const bundleFile = join(out, 'dist', 'app.tgz.svc.json');
    t.equal(await sha256(artifact), result.attestations[0]?.sha256, 'the agent hashed the very bytes the run stored');

    const bundle = JSON.parse(await readFile(bundleFile, 'utf8')) as { attestationOrigin: string; issuer: string; statementHash: string; dsseEnvelope: { payload: string; signatures: Array<{ sig: string }> } };
    t.equal(bundle.attestationOrigin, 'live');
    t.equal(bundle.issuer, issuer);
    t.equal(bundle.statementHash, result.attestations[0]?.statementHash);
    const statement = statementOf(bundle);
    t.match(statement, {
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'dist/app.tgz', digest: { sha256: await sha256(artifact) } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: {
        buildDefinition: {
          buildType: 'https://svc.dev/build/v1',
          externalParameters: { repository: REPOSITORY, sha, ref: 'refs/heads/main', event_name: 'push', workflow: { name: 'release', ref: `release@${sha}` }, job: 'build', stepParameters: { target: 'linux-x64' } },
          internalParameters: {
            iss: issuer,
            sub: `repo:${REPOSITORY}:ref:refs/heads/main:workflow:release`,
            repository: REPOSITORY,
            sha,
            svc_run_id: run.id,
            svc_job_id: build?.id,
            workflow_ref: `release@${sha}`,
            source_origin: 'triggered',
            orchestrator_id: String,
          },
          resolvedDependencies: [{ name: REPOSITORY, digest: { gitCommit: sha } }],
        },
        runDetails: { builder: { id: issuer }, metadata: { invocationId: `${issuer}/runs/${run.id}/jobs/${build?.id}`, startedOn: String } },
      },
    });
    t.notOk('aud' in statement['predicate'].buildDefinition.internalParameters, 'per-token claims stay out of the statement');
    t.ok(Buffer.from(bundle.dsseEnvelope.signatures[0]!.sig, 'base64')[0] === 0x30, 'the DSSE signature is DER (an ASN.1 sequence)');

    await exportTrustRoot(t, stack, trustRoot);
    const offline = await svcVerify(stack, artifact, bundleFile, { trustRoot });
    t.equal(offline.code, 0, `offline: ${offline.stderr}`);
    t.match(offline.verdict, { ok: true, attestationOrigin: 'live', subject: { name: 'dist/app.tgz' }, claims: { svc_run_id: run.id, attestation_origin: 'live', statement_hash: null } });
    const online = await svcVerify(stack, artifact, bundleFile, { issuer });
    t.equal(online.code, 0, `online: ${online.stderr}`);
    t.match(online.verdict, { ok: true, attestationOrigin: 'live' });
    const sbom = await svcVerify(stack, join(out, 'dist', 'sbom.json'), join(out, 'dist', 'sbom.json.svc.json'), { trustRoot });
    t.match(sbom.verdict, { ok: true, subject: { name: 'dist/sbom.json' } }, 'the second subject has its own bundle');
    const text = await stack.svc(['verify-attestation', artifact, '--bundle', bundleFile, '--trust-root', trustRoot]);
    t.match(text.stdout, /^verified: dist\/app\.tgz \(sha256 [0-9a-f]{64}\) signed by http:\/\/127\.0\.0\.1:\d+ key \S+ \[live\]/);

    await t.test('outside verifier: securesystemslib (python3)', { skip: pythonSkip }, async (t) => {
      for (const trust of [{ trustRoot }, { issuer }]) {
        const checked = await outsideVerify(artifact, bundleFile, trust);
        t.equal(checked.code, 0, JSON.stringify(checked.result));
        t.match(checked.result, { ok: true, subject: 'dist/app.tgz', predicateType: 'https://slsa.dev/provenance/v1' });
      }
    });

    await t.test('a tampered artifact is refused', async (t) => {
      const tampered = join(out, 'tampered-app.tgz');
      await writeFile(tampered, Buffer.concat([await readFile(artifact), Buffer.from('x')]));
      for (const trust of [{ trustRoot }, { issuer }]) {
        const refused = await svcVerify(stack, tampered, bundleFile, trust);
        t.equal(refused.code, 1, 'exit code 1');
        t.match(refused.verdict, { ok: false, reason: 'artifact_mismatch' });
      }
      const text = await stack.svc(['verify-attestation', tampered, '--bundle', bundleFile, '--trust-root', trustRoot]);
      t.equal(text.code, 1);
      t.match(text.stderr, /not verified \(artifact_mismatch\): artifact sha256 [0-9a-f]{64} is not the attested [0-9a-f]{64}/);
      if (!pythonSkip) {
        const outside = await outsideVerify(tampered, bundleFile, { trustRoot });
        t.equal(outside.code, 1, 'the outside verifier refuses it too');
        t.match(outside.result, { ok: false, error: /is not a subject of the statement/ });
      }
      // A statement altered in the bundle fails the signature with the outside verifier as well.
      const forged = JSON.parse(await readFile(bundleFile, 'utf8')) as { dsseEnvelope: { payload: string } };
      const forgedStatement = statementOf(forged);
      forgedStatement['subject'][0].digest.sha256 = await sha256(tampered);
      forged.dsseEnvelope.payload = Buffer.from(JSON.stringify(forgedStatement)).toString('base64');
      const forgedFile = join(out, 'forged.svc.json');
      await writeFile(forgedFile, JSON.stringify(forged));
      t.match((await svcVerify(stack, tampered, forgedFile, { trustRoot })).verdict, { ok: false, reason: 'statement_tampered' });
      if (!pythonSkip) t.match((await outsideVerify(tampered, forgedFile, { trustRoot })).result, { ok: false, error: /no envelope signature verifies/ });
    });
  });

  await t.test('deferred: no key ready → frozen statements, fulfilled later (offline-backfill by svc-admin, deferred by a node)', async (t) => {
    const listed = await stack.admin(['signing-key', 'list', '--json']);
    t.equal(listed.code, 0, listed.stderr);
    const active = (JSON.parse(listed.stdout) as { keys: Array<{ kid: string; status: string }> }).keys.filter((k) => k.status === 'active');
    t.equal(active.length, 1, 'one active key');
    const revoked = await stack.admin(['signing-key', 'revoke', '--reason', 'e2e: no key ready', '--', active[0]!.kid]);
    t.equal(revoked.code, 0, revoked.stderr);

    const sha = await stack.pushWorkflow({ 'README.md': 'deferred provenance\n' }, 'second release');
    const run = await stack.waitForRun(sha, 300_000);
    const jobs = await stack.jobsOf(run.id);
    t.equal(run.status, 'completed', jobs.map((j) => `${j.display_name} ${j.status} ${j.reason ?? ''}`).join('\n'));
    const result = await stepResult(t, stack, run.id);
    t.equal(result.deferred, true, 'the step learned the signature is deferred');
    t.same(result.bundlePaths, [], 'no bundle yet');
    t.match(result.attestations, [
      { subject: 'dist/app.tgz', deferred: true, code: 'unavailable', statementHash: /^[0-9a-f]{64}$/ },
      { subject: 'dist/sbom.json', deferred: true, code: 'unavailable', statementHash: /^[0-9a-f]{64}$/ },
    ]);
    const [first, second] = result.attestations;
    if (first === undefined || second === undefined) return;

    const pending = await stack.admin(['attestations', 'list', '--pending', '--run', run.id, '--json']);
    t.equal(pending.code, 0, pending.stderr);
    t.same((JSON.parse(pending.stdout) as { attestations: Array<{ id: string }> }).attestations.map((a) => a.id).sort(), [first.attestationId, second.attestationId].sort());
    const early = await stack.admin(['attestations', 'show', first.attestationId]);
    t.equal(early.code, 1, 'a pending attestation has no bundle yet');
    t.match(early.stderr, /still pending \(unavailable\).*svc-admin attestations backfill/);
    const noKey = await stack.admin(['attestations', 'backfill']);
    t.equal(noKey.code, 1, 'backfill without a key refuses');
    t.match(noKey.stderr, /SVC_ERR_IDENTITY_BACKFILL_NO_KEY|svc-admin signing-key generate/);

    // The orchestrator goes offline; the operator makes a key and signs one statement.
    await stack.orchestrator.stop();
    const generated = await stack.admin(['signing-key', 'generate']);
    t.equal(generated.code, 0, generated.stderr);
    const backfill = await stack.admin(['attestations', 'backfill', '--limit', '1', '--json']);
    t.equal(backfill.code, 0, backfill.stderr);
    t.match(JSON.parse(backfill.stdout), { fulfilled: 1, remaining: 1 });

    // A node comes back; its sweep signs the remaining statement as `deferred`.
    await stack.startOrchestrator();
    const out = join(stack.root, 'deferred');
    await until('the node to sign the remaining statement', async () => {
      const open = await stack.pool.oneFirst(sql.unsafe`SELECT count(*)::int AS n FROM attestations WHERE run_id = ${run.id} AND status = 'pending'`);
      return Number(open) === 0 ? true : undefined;
    }, 180_000, 500);
    const rows = await stack.admin(['attestations', 'list', '--run', run.id, '--json']);
    t.equal(rows.code, 0, rows.stderr);
    const bundles = (JSON.parse(rows.stdout) as { attestations: Array<{ id: string; status: string; attestation_origin: string | null }> }).attestations;
    t.same(bundles.map((b) => b.status), ['fulfilled', 'fulfilled']);
    const origins = Object.fromEntries(bundles.map((b) => [b.id, b.attestation_origin]));
    // Both statements were frozen by one step (often in the same millisecond), so which one the
    // operator's `--limit 1` took is not fixed: one of each origin is.
    t.same([origins[first.attestationId], origins[second.attestationId]].sort(), ['deferred', 'offline-backfill'], 'one backfilled by the operator, the other fulfilled by the node');

    await download(t, run.id, 'app', out);
    await exportTrustRoot(t, stack, trustRoot);
    for (const entry of [first, second]) {
      const origin = origins[entry.attestationId] as 'offline-backfill' | 'deferred';
      const bundleFile = join(out, `${entry.subject}.svc.json`);
      const shown = await stack.admin(['attestations', 'show', entry.attestationId, '--out', bundleFile]);
      t.equal(shown.code, 0, shown.stderr);
      const artifact = join(out, entry.subject);
      t.equal(await sha256(artifact), entry.sha256);
      const bundle = JSON.parse(await readFile(bundleFile, 'utf8')) as { attestationOrigin: string; statementHash: string };
      t.equal(bundle.attestationOrigin, origin);
      t.equal(bundle.statementHash, entry.statementHash, 'the frozen statement is what got signed');
      for (const trust of [{ trustRoot }, { issuer }]) {
        const verified = await svcVerify(stack, artifact, bundleFile, trust);
        t.equal(verified.code, 0, `${origin} ${'issuer' in trust ? 'online' : 'offline'}: ${verified.stderr}`);
        t.match(verified.verdict, { ok: true, attestationOrigin: origin, claims: { attestation_origin: origin, statement_hash: entry.statementHash, svc_run_id: run.id } });
      }
      if (!pythonSkip) {
        const outside = await outsideVerify(artifact, bundleFile, { trustRoot });
        t.equal(outside.code, 0, JSON.stringify(outside.result));
      }
    }
  });
});
