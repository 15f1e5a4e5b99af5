// Provenance bundle verifications per second: one live bundle made by the real path (run/job rows,
// db custody, DSSE over the SLSA statement), then verified over and over
//   offline  verifyAttestationBundle against an exported trust root (what `svc verify-attestation
//            --trust-root` does after reading its files): DSSE signature, statement, identity token;
//   online   the orchestrator's verdict (identity service: key table and revocations from PostgreSQL).
// Medians of 5 rounds, p50/p99 latency, peak RSS; figures only, never asserted.
// Needs PostgreSQL: SVC_BENCH_DATABASE_URL (default the test server); a scratch database is made
// and dropped. Run: node bench/attestation-verify.ts [verifications per round offline] [online]
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { createIdentityService } from '../kernel/orchestrator/identity/service.ts';
import { publicKeySet } from '../kernel/orchestrator/identity/key-store.ts';
import { verifyAttestationBundle } from '../kernel/orchestrator/identity/verify-attestation.ts';
import { createDatabase, ensureDatabaseExists } from '../kernel/services/db/index.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from '../test/kernel/orchestrator/identity/fixtures.ts';

const perRoundOffline = Number(process.argv[2] ?? 2000);
const perRoundOnline = Number(process.argv[3] ?? 500);
const ROUNDS = 5;
const ISSUER = 'https://ci.example.test';
const adminUrl = process.env['SVC_BENCH_DATABASE_URL'] ?? process.env['SVC_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `svc_bench_attest_${process.pid}`;
await ensureDatabaseExists(adminUrl, name);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const pool = await createDatabase({ url: url.toString(), logger: silent });
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] as number;
const percentile = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] as number;
let peakRss = process.memoryUsage().rss;

async function measure(label: string, count: number, verify: () => Promise<{ ok: boolean }>): Promise<void> {
  if (!(await verify()).ok) throw new Error(`${label}: the bundle does not verify`);
  const rates: number[] = [];
  const latencies: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const started = performance.now();
    for (let i = 0; i < count; i += 1) {
      const t0 = performance.now();
      const verdict = await verify();
      latencies.push(performance.now() - t0);
      if (!verdict.ok) throw new Error(`${label}: refused in round ${round}`);
    }
    rates.push(count / ((performance.now() - started) / 1000));
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }
  console.log(
    `${label.padEnd(8)} ${median(rates).toFixed(0).padStart(7)} verifications/s (median of ${ROUNDS})   p50 ${percentile(latencies, 50).toFixed(3)} ms   p99 ${percentile(latencies, 99).toFixed(3)} ms   (${count} per round)`,
  );
}

try {
  await migrateOrchestrator(pool);
  const { jobId, agentId } = await insertRunJob(pool);
  const custody = boundDbCustody(pool, masterKeys(randomBytes(32)), 1000);
  await custody.generate();
  const service = createIdentityService({ pool, custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'bench', logger: silent });
  const artifact = randomBytes(1 << 20);
  const artifactSha256 = createHash('sha256').update(artifact).digest('hex');
  const made = await service.createAttestation({ jobId, agentId, artifact: { name: 'dist/app.tgz', sha256: artifactSha256 }, parameters: { target: 'linux-x64' } });
  if ('deferred' in made) throw new Error(`deferred: ${made.code}`);
  const bundle = JSON.parse(JSON.stringify(made.bundle)) as unknown;
  const trust = { issuer: ISSUER, jwks: await publicKeySet(pool) };
  console.log(`attestation bundle verification, one ${JSON.stringify(bundle).length}-byte bundle, sequential, one process`);
  await measure('offline', perRoundOffline, () => verifyAttestationBundle({ bundle, artifactSha256, trust }));
  await measure('online', perRoundOnline, () => service.verifyAttestation({ bundle, artifactSha256 }));
  console.log(`peak RSS ${(peakRss / (1024 * 1024)).toFixed(1)} MiB`);
} finally {
  await pool.end();
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
  await client.end();
}
