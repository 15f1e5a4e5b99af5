// The Sigstore bundle with an RFC 3161 timestamp, checked by sigstore-js against the TSA that the
// orchestrator's Sigstore trusted root publishes (a real TSA: `openssl ts -reply` behind HTTP,
// test/fixtures/tsa.ts; real PostgreSQL; the public routes on a real HTTP server). sigstore-js is
// asked for one timestamp (timestampThreshold 1), so a key revoked as compromised at T, published
// with validFor.end = T, verifies a signature timestamped before T and refuses one after; another
// signature's token fails. `svc verify-attestation`'s verifier gives the same verdicts.
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import t from 'tap';
import { bundleFromJSON } from '@sigstore/bundle';
import { PublicKey, TrustedRoot } from '@sigstore/protobuf-specs';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import { revokeSigningKey } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { registerIdentityRoutes } from '../../../../kernel/orchestrator/identity/routes.ts';
import { createIdentityService } from '../../../../kernel/orchestrator/identity/service.ts';
import { createTimestamper } from '../../../../kernel/orchestrator/identity/timestamp.ts';
import { createHttpServer, listen } from '../../../../kernel/services/http/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { startTestTsa } from '../../../fixtures/tsa.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from './fixtures.ts';

type Json = Record<string, any>;
const digest = createHash('sha256').update('the release tarball').digest('hex');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

t.test('Sigstore bundles with RFC 3161 timestamps', async (t) => {
  // Whole seconds: sigstore-js fails to parse a genTime with 1 or 2 fraction digits (see tsa.ts).
  const tsa = await startTestTsa({ clockPrecisionDigits: 0 });
  t.teardown(() => tsa.close());
  await eachDatabase(t, async (t, db) => {
    await migrateOrchestrator(db.pool);
    const custody = boundDbCustody(db.pool, masterKeys());
    await custody.generate();
    const kid = await custody.keyId();
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const timestamper = createTimestamper({ url: tsa.url, certificates: [tsa.rootPem, tsa.tsaPem] });
    const service = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 300, timestamper });
    const app = createHttpServer({ logger: silent });
    await registerIdentityRoutes(app, service);
    await listen(app, { port });
    t.teardown(() => app.close());

    const { jobId, agentId } = await insertRunJob(db.pool);
    const attest = async () => {
      const response = await service.answerAttestationRequest(agentId, { type: 'attestation.create.request', jobId, requestId: randomUUID(), artifact: { name: 'dist/app.tgz', sha256: digest } } as never);
      if (response.sigstoreBundle === undefined || response.bundle === undefined) throw new Error(`no bundle: ${JSON.stringify(response)}`);
      return { sigstore: response.sigstoreBundle as Json, svc: response.bundle };
    };
    const first = await attest();
    const second = await attest();

    const published = async () => ({
      root: (await (await fetch(`${issuer}/.well-known/svc/trusted_root.json`)).json()) as Json,
      keys: (await (await fetch(`${issuer}/.well-known/svc/public_keys.json`)).json()) as Json,
    });
    const sigstoreVerify = async (bundle: Json) => {
      const { root, keys } = await published();
      const publicKeys = Object.fromEntries(Object.entries(keys.keys as Json).map(([hint, key]) => [hint, PublicKey.fromJSON(key)]));
      const verifier = new Verifier(toTrustMaterial(TrustedRoot.fromJSON(root), publicKeys), { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 1 });
      return verifier.verify(toSignedEntity(bundleFromJSON(bundle)));
    };
    const genTime = async (bundle: Json) => {
      const verdict = await service.verifyAttestation({ bundle, artifactSha256: digest });
      if (!verdict.ok || verdict.signedAt === undefined) throw new Error(`no trusted time: ${JSON.stringify(verdict)}`);
      return new Date(verdict.signedAt.genTime);
    };

    t.test('the bundle carries the token; the trusted root carries the TSA chain, leaf first', async (t) => {
      const stamps = first.sigstore.verificationMaterial.timestampVerificationData.rfc3161Timestamps;
      t.equal(stamps.length, 1);
      const token = Buffer.from(first.svc.timestampVerificationData?.rfc3161Timestamps[0]?.signedTimestamp ?? '', 'base64');
      const response = Buffer.from(stamps[0].signedTimestamp, 'base64');
      t.ok(response.subarray(response.length - token.length).equals(token) && token.length > 0, 'the svc bundle token, inside a TimeStampResp');
      const { root } = await published();
      t.equal(root.timestampAuthorities.length, 1);
      t.match(root.timestampAuthorities[0], { uri: tsa.url, subject: { commonName: 'svc test TSA' }, validFor: { start: /^\d{4}-/ } });
      const der = (pem: string) => Buffer.from(pem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').toString('base64');
      t.same(root.timestampAuthorities[0].certChain.certificates.map((c: Json) => c.rawBytes), [der(tsa.tsaPem), der(tsa.rootPem)]);
    });

    t.test('sigstore-js verifies the timestamp against the published TSA; an altered token fails', async (t) => {
      t.ok((await sigstoreVerify(first.sigstore)).key, 'verified with one trusted timestamp');
      const forged = JSON.parse(JSON.stringify(first.sigstore)) as Json;
      forged.verificationMaterial.timestampVerificationData = second.sigstore.verificationMaterial.timestampVerificationData; // another signature's token
      await t.rejects(sigstoreVerify(forged), { code: 'TIMESTAMP_ERROR' });
      t.match(await service.verifyAttestation({ bundle: forged, artifactSha256: digest }), { ok: false, reason: 'timestamp_invalid' });
      const untimestamped = JSON.parse(JSON.stringify(first.sigstore)) as Json;
      untimestamped.verificationMaterial.timestampVerificationData.rfc3161Timestamps = [];
      await t.rejects(sigstoreVerify(untimestamped), { code: 'TIMESTAMP_ERROR' }, 'one timestamp is required');
    });

    // genTimes are whole seconds here (and sigstore-js would drop a fraction anyway), so each
    // compromise time below sits apart from the genTime it is compared with by the second, not by
    // waiting: the keys' creation is moved back 2 s in the table so such a time is a valid
    // --compromised-at.
    const backdate = (k: string) => db.pool.query(sql.unsafe`UPDATE signing_keys SET created_at = created_at - interval '2 seconds' WHERE kid = ${k}`);
    t.test('revoked as compromised after a signature: it still verifies', async (t) => {
      const g1 = await genTime(first.sigstore);
      await backdate(kid);
      const compromisedAt = new Date(g1.getTime() + 1);
      await revokeSigningKey(db.pool, kid, 'test: host breached', { compromisedAt });
      t.match((await published()).keys.keys[kid], { validFor: { end: compromisedAt.toISOString() } });
      t.ok((await sigstoreVerify(first.sigstore)).key, 'sigstore-js: timestamped before T');
      t.match(await service.verifyAttestation({ bundle: first.sigstore, artifactSha256: digest }), { ok: true, format: 'sigstore-v0.3', signedAt: { genTime: g1.toISOString() } });
    });

    t.test('revoked as compromised before a signature: it does not', async (t) => {
      await custody.generate();
      const kid2 = await custody.keyId();
      t.not(kid2, kid);
      const third = await attest();
      const g3 = await genTime(third.sigstore);
      await backdate(kid2);
      const compromisedAt = new Date(Math.floor(g3.getTime() / 1000) * 1000 - 500);
      await revokeSigningKey(db.pool, kid2, 'test: host breached', { compromisedAt });
      await t.rejects(sigstoreVerify(third.sigstore), { code: 'PUBLIC_KEY_ERROR', message: /not valid for timestamp/ }, 'sigstore-js: timestamped after T');
      t.match(await service.verifyAttestation({ bundle: third.sigstore, artifactSha256: digest }), { ok: false, reason: 'key_revoked' });
      t.match(await service.verifyAttestation({ bundle: first.sigstore, artifactSha256: digest }), { ok: true }, 'the other key\'s earlier signature is untouched');
    });
  });
});
