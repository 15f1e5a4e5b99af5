// Identity-token minting throughput per custody kind: the whole path (ownership check and claims
// from the run/job rows, JWS through the custody plugin). Medians of 5 rounds, figures only.
// Needs PostgreSQL: SVC_BENCH_DATABASE_URL (default the test server); a scratch database is made
// and dropped. Run: node bench/mint.ts [tokens per round for db/kms] [tokens per round for command]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createIdentityService } from '../kernel/orchestrator/identity/service.ts';
import type { CustodyExtensionPoint } from '../core/extension-points/custody.ts';
import { createDatabase, ensureDatabaseExists } from '../kernel/services/db/index.ts';
import type { CustodyKind } from '../schemas/identity.ts';
import { AwsKmsCustody } from '../plugins/custody/aws-kms/custody.ts';
import { CommandCustody } from '../plugins/custody/command/index.ts';
import { startKmsServer } from '../test/fixtures/kms-server.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from '../test/kernel/orchestrator/identity/fixtures.ts';

const perRound = Number(process.argv[2] ?? 500);
const perRoundCommand = Number(process.argv[3] ?? 40);
const ROUNDS = 5;
const adminUrl = process.env['SVC_BENCH_DATABASE_URL'] ?? process.env['SVC_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `svc_bench_mint_${process.pid}`;
await ensureDatabaseExists(adminUrl, name);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const pool = await createDatabase({ url: url.toString(), logger: silent });
const kms = await startKmsServer();
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-mint-'));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

try {
  await migrateOrchestrator(pool);
  const { jobId, agentId } = await insertRunJob(pool);
  const db = boundDbCustody(pool, masterKeys(randomBytes(32)), 1000);
  await db.generate();
  const signer = fileURLToPath(new URL('../test/fixtures/signer-command.mjs', import.meta.url));
  const kinds: Array<[CustodyKind, CustodyExtensionPoint, number]> = [
    ['db', db, perRound],
    ['aws-kms', new AwsKmsCustody({ keyArn: kms.keyArn, region: 'us-east-1', accessKeyId: kms.accessKeyId, secretAccessKey: kms.secretAccessKey, endpoint: kms.url, timeoutMs: 10_000 }), perRound],
    ['command', new CommandCustody({ command: `${process.execPath} ${signer} ${join(dir, 'key.json')}`, timeoutMs: 10_000, maxOutputBytes: 65536, publicKeyCacheMs: 60_000 }), perRoundCommand],
  ];
  console.log(`mint throughput, median of ${ROUNDS} rounds (sequential requests, one process)`);
  for (const [kind, custody, count] of kinds) {
    const service = createIdentityService({ pool, custody, custodyKind: kind, issuer: 'https://ci.example.test', orchestratorId: 'bench', logger: silent });
    await service.mintIdentityToken({ jobId, agentId, audience: 'warm-up' });
    const rates: number[] = [];
    const latencies: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const started = performance.now();
      for (let i = 0; i < count; i += 1) {
        const t0 = performance.now();
        const result = await service.mintIdentityToken({ jobId, agentId, audience: 'bench' });
        latencies.push(performance.now() - t0);
        if (!('token' in result)) throw new Error(`${kind}: deferred ${result.code}`);
      }
      rates.push(count / ((performance.now() - started) / 1000));
    }
    console.log(`${kind.padEnd(8)} ${median(rates).toFixed(0).padStart(6)} tokens/s   median latency ${median(latencies).toFixed(2)} ms   (${count} per round)`);
    (custody as { close?: () => void }).close?.();
  }
} finally {
  await pool.end();
  await kms.stop();
  await rm(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
  await client.end();
}
