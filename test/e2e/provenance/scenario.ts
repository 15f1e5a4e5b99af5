// The stack both provenance scenarios run on (test/e2e/provenance.test.ts, live; and
// provenance-deferred.test.ts): svc-relay, svc-orchestrator with an OIDC issuer and db custody,
// svc-agent in the process sandbox, real PostgreSQL, a bare repository with the post-receive hook
// (test/fixtures/jobs-stack.ts), and the helpers that read and verify what a step attested. Two
// files, each with its own stack, so that neither runs past a minute on a busy machine.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { eachDatabase, inCi, type Test, type TestDb } from '../../fixtures/db.ts';
import { ORG, startJobsStack, type JobsStack } from '../../fixtures/jobs-stack.ts';
import { startS3Server } from '../../fixtures/s3-server.ts';

export const PYTHON = '/usr/bin/python3';
const OUTSIDE_VERIFIER = fileURLToPath(new URL('../../fixtures/dsse-verify.py', import.meta.url));
const probe = await execa(PYTHON, ['-c', 'import securesystemslib.signer, cryptography'], { reject: false });
export const pythonSkip = probe.exitCode === 0 ? false : 'python3-securesystemslib is not installed (apt-get install -y python3-securesystemslib)';
if (pythonSkip && inCi) throw new Error(`CI needs ${pythonSkip}`);

export const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
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

export interface StepAttestation {
  subject: string;
  sha256: string;
  attestationId: string;
  statementHash: string;
  deferred: boolean;
  code?: string;
  bundlePath?: string;
  artifact?: string;
}
export interface StepResult {
  bundlePaths: string[];
  deferred: boolean;
  attestations: StepAttestation[];
}
export interface Verdict {
  ok: boolean;
  reason?: string;
  attestationOrigin?: string;
  subject?: { name: string; sha256: string };
  claims?: Record<string, unknown>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export const sha256 = async (file: string) => createHash('sha256').update(await readFile(file)).digest('hex');

export function statementOf(bundle: { dsseEnvelope: { payload: string } }): Record<string, any> {
  return JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8')) as Record<string, any>;
}

/** The ATTEST line the step logged (its ctx.attestProvenance result). */
export async function stepResult(t: Test, stack: JobsStack, runId: string): Promise<StepResult> {
  const out = await stack.svc(['runs', 'logs', runId, '--json']);
  t.equal(out.code, 0, out.stderr);
  const lines = Object.values((JSON.parse(out.stdout) as { logs: Record<string, Array<{ text: string }>> }).logs).flatMap((l) => l.map((x) => x.text));
  const line = lines.find((l) => l.startsWith('ATTEST '));
  if (line === undefined) throw new Error(`the step logged no ATTEST line:\n${lines.join('\n')}`);
  t.ok(lines.includes('UPLOADED app'), 'the files were uploaded as artifact app');
  return JSON.parse(line.slice('ATTEST '.length)) as StepResult;
}

/** svc verify-attestation offline (trust root) and online (issuer), as --json verdicts with exit codes. */
export async function svcVerify(stack: JobsStack, artifact: string, bundle: string, trust: { trustRoot: string } | { issuer: string }): Promise<{ code: number | null; verdict: Verdict; stderr: string }> {
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

/** test/fixtures/dsse-verify.py (securesystemslib) with a trust root, the issuer, or a PEM public key file. */
export async function outsideVerify(artifact: string, bundle: string, trust: { trustRoot: string } | { issuer: string } | { publicKey: string }): Promise<{ code: number | undefined; result: { ok: boolean; error?: string; subject?: string; predicateType?: string } }> {
  const where = 'trustRoot' in trust ? ['--trust-root', trust.trustRoot] : 'issuer' in trust ? ['--issuer', trust.issuer] : ['--public-key', trust.publicKey];
  const out = await execa(PYTHON, [OUTSIDE_VERIFIER, artifact, bundle, ...where], { reject: false, timeout: 60_000 });
  return { code: out.exitCode, result: JSON.parse(out.stdout) as { ok: boolean; error?: string } };
}

export async function exportTrustRoot(t: Test, stack: JobsStack, file: string): Promise<void> {
  const out = await stack.admin(['signing-key', 'export', '--public', '--out', file]);
  t.equal(out.code, 0, `signing-key export: ${out.stderr}`);
}

export interface ProvenanceStack {
  stack: JobsStack;
  db: TestDb;
  issuer: string;
  trustRoot: string;
  download(t: Test, runId: string, name: string, dir: string): Promise<void>;
}

/**
 * Runs `body` on a provenance stack, once per database flavour of the run: the system-PostgreSQL
 * stack stores on the filesystem, the embedded one on S3 (s3rver over HTTP, pre-signed signatures
 * checked by the fixture), so both storages are covered without a third stack.
 */
export async function provenanceScenario(t: Test, body: (t: Test, p: ProvenanceStack) => Promise<void>): Promise<void> {
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
    const download = async (t: Test, runId: string, name: string, dir: string) => {
      const out = await stack.svc(['runs', 'download', runId, name, '--output', dir]);
      t.equal(out.code, 0, `svc runs download ${name}: ${out.stderr}`);
    };
    await body(t, { stack, db, issuer, trustRoot: join(stack.root, 'trust-root.json'), download });
  });
}
