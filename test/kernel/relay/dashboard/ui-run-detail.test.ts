// The run page's extras through a real relay and orchestrator (startPlatformStack, provenance
// signing on): a job's outputs as stored (masked values stay `***`), an attestation made with the
// orchestrator's own key shows "verified" and its bundle downloads and verifies offline, then
// "revoked key" once the key is revoked; two re-runs through the dashboard's own action show the
// whole chain on each run's page with that run marked. The download route refuses a request
// without credentials, a token of another org and a malformed id.
import { createHash } from 'node:crypto';
import t from 'tap';
import { createIdentityService } from '../../../../kernel/orchestrator/identity/service.ts';
import { publicKeySet, revokeSigningKey } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { verifyAttestationBundle } from '../../../../kernel/orchestrator/identity/verify-attestation.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { moveStatus, until } from '../../../fixtures/runs.ts';
import { RERUN_COOLDOWN_MS } from '../../../../kernel/orchestrator/runs/api/index.ts';
import { boundDbCustody, masterKeys } from '../../orchestrator/identity/fixtures.ts';


const ISSUER = 'https://ci.example.test';
const ARTIFACT = Buffer.from('the release tarball');
const DIGEST = createHash('sha256').update(ARTIFACT).digest('hex');

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db, { provenanceIssuer: ISSUER });
  const base = stack.relayUrl;
  const alice = stack.auth(await stack.pat('alice'));
  const mallory = stack.auth(await stack.pat('mallory', OTHER_ORG));
  const { runId } = await stack.pushRun();
  const org = `/ui/orgs/${ORG}`;
  const page = async (id: string) => {
    const res = await fetch(`${base}${org}/runs/${id}`, { headers: alice });
    if (res.status !== 200) throw new Error(`GET the page of ${id}: ${res.status} ${await res.text()}`);
    return res.text();
  };
  const build = (await db.pool.one(sql.unsafe`select id::text as id from jobs where run_id = ${runId} and name = 'build'`)) as { id: string };

  // What the agent would have done: run the job, store its (masked) outputs, attest a file.
  await db.pool.query(sql.unsafe`update jobs set agent_id = 'agent-ui' where id = ${build.id}`);
  await moveStatus(db.pool, 'jobs', build.id, 'running');
  await db.pool.query(sql.unsafe`update jobs set outputs = ${sql.jsonb({ version: '1.0.0', token: '***', 'with <markup>': '<b>x</b>' })} where id = ${build.id}`);
  const kid = await until('the orchestrator to generate its signing key', async () => {
    const row = (await db.pool.maybeOne(sql.unsafe`select kid from signing_keys where status = 'active'`)) as { kid: string } | null;
    return row?.kid;
  });
  const identity = createIdentityService({ pool: db.pool, custody: boundDbCustody(db.pool, masterKeys(stack.masterKey)), custodyKind: 'db', issuer: ISSUER, orchestratorId: 'test', logger: testLogger });
  const made = await identity.createAttestation({ jobId: build.id, agentId: 'agent-ui', artifact: { name: 'dist/app.tgz', sha256: DIGEST } });
  if ('deferred' in made) throw new Error(`deferred: ${made.code}`);
  const download = `${org}/runs/${runId}/attestations/${made.attestationId}`;

  await t.test('job outputs: shown per job, as stored, escaped', async (t) => {
    const text = await page(runId);
    const outputs = new RegExp(`<dl class="outputs" data-job="${build.id}">(.*?)</dl>`, 's').exec(text)?.[1] ?? '';
    t.match(outputs, /<dt class="mono">version<\/dt><dd><code>1\.0\.0<\/code><\/dd>/);
    t.match(outputs, /<dt class="mono">token<\/dt><dd><code>\*\*\*<\/code><\/dd>/, 'a masked value stays masked');
    t.match(outputs, /with &lt;markup&gt;.*&lt;b&gt;x&lt;\/b&gt;/s, 'keys and values are escaped');
  });

  await t.test('an attestation by the orchestrator\'s key: verified, downloadable, verifies offline', async (t) => {
    const text = await page(runId);
    const row = new RegExp(`<tr data-attestation="${made.attestationId}" data-badge="([a-z_]+)">(.*?)</tr>`, 's').exec(text);
    t.equal(row?.[1], 'verified', 'the badge says verified');
    t.match(row?.[2], /dist\/app\.tgz/);
    t.match(row?.[2], new RegExp(`signed by ${ISSUER} key ${kid}`));
    t.match(row?.[2], new RegExp(`href="${download}" download="app.tgz.svc.json"`), 'with its download link');
    const res = await fetch(base + download, { headers: alice });
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    t.equal(res.headers.get('content-disposition'), 'attachment; filename="app.tgz.svc.json"');
    const bundle = (await res.json()) as unknown;
    t.same(bundle, made.bundle, 'the bundle as signed');
    t.match(await verifyAttestationBundle({ bundle, artifactSha256: DIGEST, trust: { issuer: ISSUER, jwks: await publicKeySet(db.pool) } }), { ok: true }, 'and it verifies offline');
  });

  await t.test('the download refuses strangers and bad ids', async (t) => {
    const anonymous = await fetch(base + download, { redirect: 'manual' });
    t.equal(anonymous.status, 303, 'no credentials: sent to sign in');
    t.equal(anonymous.headers.get('location'), `/signin?next=${encodeURIComponent(download)}`);
    const other = await fetch(base + download, { headers: mallory });
    t.equal(other.status, 403, "another org's token");
    t.notMatch(await other.text(), /dsseEnvelope/);
    t.equal((await fetch(`${base}${org}/runs/${runId}/attestations/nope`, { headers: alice })).status, 400, 'a malformed id');
    const unknown = await fetch(`${base}${org}/runs/${runId}/attestations/00000000-0000-4000-8000-000000000000`, { headers: alice });
    t.equal(unknown.status, 404, 'an unknown id');
  });

  await t.test('the key revoked: the badge says revoked key, with the reason', async (t) => {
    await revokeSigningKey(db.pool, kid, 'ui test');
    const text = await page(runId);
    const row = new RegExp(`<tr data-attestation="${made.attestationId}" data-badge="([a-z_]+)">(.*?)</tr>`, 's').exec(text);
    t.equal(row?.[1], 'revoked_key');
    t.match(row?.[2], /revoked key/);
    t.match(row?.[2], /key_revoked/);
  });

  await t.test('two re-runs from the page: every run shows the whole chain, itself marked', async (t) => {
    const rerun = async (id: string): Promise<string> => {
      const res = await fetch(`${base}${org}/runs/${id}/rerun`, { method: 'POST', headers: { ...alice, accept: 'application/json' } });
      const body = (await res.json()) as { ok: boolean; location?: string };
      t.equal(res.status, 200, `re-run of ${id}: ${JSON.stringify(body)}`);
      return body.location!.split('/').pop()!;
    };
    const second = await rerun(runId);
    await new Promise((r) => setTimeout(r, RERUN_COOLDOWN_MS + 500));
    const third = await rerun(second);
    const chain = [runId, second, third];
    for (const current of chain) {
      const text = await page(current);
      const lineage = /<ol class="lineage"[^>]*>(.*?)<\/ol>/s.exec(text)?.[1] ?? '';
      t.same([...lineage.matchAll(/<li data-run="([^"]+)"/g)].map((m) => m[1]), chain, `the chain, oldest first, on ${current}`);
      const marked = [...lineage.matchAll(/<li data-run="([^"]+)" class="current">/g)].map((m) => m[1]);
      t.same(marked, [current], 'this run is marked');
      t.match(lineage, /aria-current="page"/);
      for (const other of chain.filter((id) => id !== current)) t.match(lineage, new RegExp(`href="${org}/runs/${other}"`), `links ${other}`);
      t.match(lineage, /re-run by alice/);
    }
  });
});
