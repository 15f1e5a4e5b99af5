// svc-admin attestations list/show/backfill in-process (runCli) against a real orchestrator
// database: statements frozen while no key was ready are listed as pending; show refuses them;
// backfill refuses without a usable key and changes nothing, then signs them (origin
// offline-backfill, the token bound by statement_hash) once a key exists; show writes a bundle
// that verifies against the exported keys; bad usage exits 2.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { decodeJwt } from 'jose';
import { publicKeySet } from '../../../kernel/orchestrator/identity/key-store.ts';
import { createIdentityService } from '../../../kernel/orchestrator/identity/service.ts';
import { verifyAttestationBundle } from '../../../kernel/orchestrator/identity/verify-attestation.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from '../../kernel/orchestrator/identity/fixtures.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const ISSUER = 'https://ci.example.test';
const digest = (text: string) => Buffer.from(text).toString('hex').padEnd(64, '0').slice(0, 64);

t.test('attestations list, show, backfill', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrateOrchestrator(db.pool);
    const master = randomBytes(32);
    const dir = await mkdtemp(join(tmpdir(), 'svc-admin-attestations-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const baseEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: master.toString('base64'), SVC_DATA_DIR: dir };
    const admin = (args: string[], extra: Record<string, string> = {}) =>
      runCli(BIN, ['attestations', ...args], { env: { ...baseEnv, SVC_ORCHESTRATOR_PROVENANCE_ISSUER: ISSUER, ...extra }, cwd: dir });
    const pendingCount = async () => Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int AS n FROM attestations WHERE status = 'pending'`));

    // Two statements frozen while the signer was down (the orchestrator's own path).
    const down = createIdentityService({
      pool: db.pool,
      custody: { keyId: async () => { throw new Error('signer down'); }, getPublicJwk: async () => ({}), sign: async () => new Uint8Array() } as never,
      custodyKind: 'command',
      issuer: ISSUER,
      orchestratorId: 'orch-a',
      logger: silent,
    });
    const job = await insertRunJob(db.pool);
    const frozen = [];
    for (const [name, sha] of [['dist/a.tgz', digest('a')], ['dist/b.tgz', digest('b')]] as const) {
      const made = await down.createAttestation({ jobId: job.jobId, agentId: job.agentId, artifact: { name, sha256: sha } });
      if (!('deferred' in made)) throw new Error('expected a deferral');
      frozen.push({ ...made, name, sha });
    }
    const [a, b] = frozen;
    if (a === undefined || b === undefined) return;

    await t.test('list: pending statements with their code; --json, --run, --fulfilled', async (t) => {
      const text = await admin(['list', '--pending']);
      t.equal(text.code, 0, text.stderr);
      const lines = text.stdout.trimEnd().split('\n');
      t.equal(lines.length, 2);
      t.match(lines.join('\n'), new RegExp(`${a.attestationId}  run ${job.runId}  pending \\(signer_failed\\)\\s+dist/a\\.tgz  sha256:${a.sha}`));
      const json = await admin(['list', '--run', job.runId, '--json']);
      t.equal(json.code, 0, json.stderr);
      t.match(JSON.parse(json.stdout), { attestations: [{ status: 'pending', defer_code: 'signer_failed', statement_hash: /^[0-9a-f]{64}$/ }, { status: 'pending' }] });
      const none = await admin(['list', '--fulfilled']);
      t.equal(none.stdout.trim(), 'no attestations');
    });

    await t.test('show refuses a pending attestation; bad ids', async (t) => {
      const pending = await admin(['show', a.attestationId]);
      t.equal(pending.code, 1);
      t.match(pending.stderr, /still pending \(signer_failed\).*svc-admin attestations backfill/);
      const unknown = await admin(['show', '00000000-0000-4000-8000-00000000abcd']);
      t.equal(unknown.code, 1);
      t.match(unknown.stderr, /no attestation has id/);
      const bad = await admin(['show', 'nope']);
      t.equal(bad.code, 2, 'a non-UUID is a usage error');
      const badRun = await admin(['list', '--run', 'nope']);
      t.equal(badRun.code, 2);
      t.match(badRun.stderr, /--run nope is not a run id/);
    });

    await t.test('backfill without a key or without an issuer changes nothing', async (t) => {
      const noKey = await admin(['backfill']);
      t.equal(noKey.code, 1);
      t.match(noKey.stderr, /no statement was signed \(unavailable\).*svc-admin signing-key generate.*\(2 pending\)/);
      const noIssuer = await admin(['backfill'], { SVC_ORCHESTRATOR_PROVENANCE_ISSUER: '' });
      t.equal(noIssuer.code, 2);
      t.match(noIssuer.stderr, /SVC_ORCHESTRATOR_PROVENANCE_ISSUER/);
      t.equal(await pendingCount(), 2, 'still two pending');
    });

    await t.test('with a key: backfill signs (offline-backfill), show writes a bundle that verifies', async (t) => {
      await boundDbCustody(db.pool, masterKeys(master)).generate();
      const one = await admin(['backfill', '--limit', '1']);
      t.equal(one.code, 0, one.stderr);
      t.equal(one.stdout.trim(), 'Signed 1 pending attestation(s) (offline-backfill); 1 still pending.');
      const rest = await admin(['backfill', '--json']);
      t.equal(rest.code, 0, rest.stderr);
      t.same(JSON.parse(rest.stdout), { fulfilled: 1, remaining: 0 });
      t.equal(await pendingCount(), 0);

      const trust = { issuer: ISSUER, jwks: await publicKeySet(db.pool) };
      for (const entry of [a, b]) {
        const file = join(dir, `${entry.name.split('/').pop()}.svc.json`);
        const shown = await admin(['show', entry.attestationId, '--out', file]);
        t.equal(shown.code, 0, shown.stderr);
        t.equal(shown.stdout.trim(), `wrote ${file}: ${entry.name} [offline-backfill]`);
        const bundle = JSON.parse(await readFile(file, 'utf8')) as { statementHash: string; identityToken: string };
        t.equal(bundle.statementHash, entry.statementHash, 'the frozen statement was signed');
        t.match(decodeJwt(bundle.identityToken), { attestation_origin: 'offline-backfill', statement_hash: entry.statementHash, orchestrator_id: 'orch-a' });
        t.match(await verifyAttestationBundle({ bundle, artifactSha256: entry.sha, trust }), { ok: true, attestationOrigin: 'offline-backfill' });
      }
      const printed = await admin(['show', a.attestationId]);
      t.equal(printed.code, 0);
      t.match(JSON.parse(printed.stdout), { attestationOrigin: 'offline-backfill', dsseEnvelope: { payloadType: 'application/vnd.in-toto+json' } });
    });
  });
});
