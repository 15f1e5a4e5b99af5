// `svc-admin diagnose [--json]`: is this orchestrator installation healthy? One line per check:
//   database   connect to the orchestrator database
//   migrations applied migrations against this build's (nothing is migrated here)
//   storage    write, read back and delete a probe object in the configured storage
//   relay-link every live node's link to the relay (asked through its admin debug route)
//   signing    an active signing key that this master key opens (db custody)
//   agents     agents online
// Status and exit code as `svc doctor` (core/cli/checks.ts): 0 all pass, 1 a warning, 2 a
// failure. Checks that need a failed one are skipped.
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { Flags } from '@oclif/core';
import { Type } from 'typebox';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { checkLine, checksExitCode, overallStatus, summaryLine, type Check, type CheckStatus, type OverallStatus } from '../../core/cli/checks.ts';
import { messageOf } from '../../core/errors.ts';
import type { SvcConfig } from '../../schemas/config.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../kernel/orchestrator/database.ts';
import { activeKey, sealingAd } from '../../kernel/orchestrator/identity/key-store.ts';
import { openWithAny } from '../../kernel/services/crypto/sealing.ts';
import { sql, sqlTyped, type DatabasePool } from '../../kernel/services/db/index.ts';
import { withStorage } from './cache/shared.ts';
import { adminConfig, adminMasterKeys, databaseFlag } from './signing-key/shared.ts';
import { askNode, liveNodes, withPlainDatabase } from './debug/nodes.ts';

export interface DiagnoseReport {
  status: OverallStatus;
  checks: Check[];
}

type Add = (name: string, status: CheckStatus, message: string) => void;
const DB_CHECKS = ['migrations', 'relay-link', 'signing', 'agents'];

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

async function checkMigrations(pool: DatabasePool, add: Add): Promise<void> {
  const files = (await readdir(ORCHESTRATOR_MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
  const exists = await pool.maybeOne(sql.unsafe`select to_regclass(${ORCHESTRATOR_MIGRATIONS_TABLE}) as t`);
  if ((exists as { t: string | null } | null)?.t === null) return add('migrations', 'fail', 'no migration applied: this database was never used by an orchestrator (start one, it migrates)');
  const applied = new Set(await pool.anyFirst(sqlTyped(Type.Object({ name: Type.String() }))`select name from ${sql.identifier([ORCHESTRATOR_MIGRATIONS_TABLE])}`));
  const missing = files.filter((f) => !applied.has(f));
  const unknown = [...applied].filter((f) => !files.includes(f));
  const latest = [...applied].sort().at(-1) ?? '(none)';
  if (unknown.length > 0) return add('migrations', 'warn', `the database has ${unknown.length} migration(s) this svc-admin does not know (${unknown.slice(0, 3).join(', ')}): it is older than the orchestrators; upgrade it`);
  if (missing.length > 0) return add('migrations', 'warn', `${missing.length} migration(s) not applied yet (first ${missing[0]}); the orchestrator applies them at start: restart or upgrade it`);
  add('migrations', 'pass', `${applied.size} applied, latest ${latest}`);
}

async function checkStorage(config: SvcConfig, add: Add): Promise<void> {
  const key = `diagnose/probe-${randomUUID()}`;
  const body = Buffer.from(`svc-admin diagnose ${new Date().toISOString()}`);
  try {
    await withStorage(config, async (storage) => {
      await storage.put(key, body);
      try {
        const back = await readAll(await storage.get(key));
        if (!back.equals(body)) throw new Error('the probe object read back differs from what was written');
      } finally {
        await storage.delete(key);
      }
      if ((await storage.head(key)) !== null) throw new Error('the probe object is still there after delete');
    });
    add('storage', 'pass', `${config.storage.type}: wrote, read back and deleted a probe object`);
  } catch (error) {
    add('storage', 'fail', `${config.storage.type}: ${messageOf(error)}`);
  }
}

async function checkRelayLink(pool: DatabasePool, config: SvcConfig, token: string | undefined, add: Add): Promise<void> {
  if (token === undefined) return add('relay-link', 'skip', 'set SVC_BOOTSTRAP_ADMIN_TOKEN (or --token) to ask the nodes about their relay link');
  const nodes = await liveNodes(pool, config);
  if (nodes.length === 0) return add('relay-link', 'fail', 'no live orchestrator node in the cluster (none heart-beat recently): start one');
  const answers = await Promise.all(nodes.map((n) => askNode(n, token)));
  const silent = answers.filter((a) => !a.ok).map((a) => `${a.target.nodeId} ${a.ok ? '' : a.reason}`);
  const ok = answers.flatMap((a) => (a.ok ? [a.debug] : []));
  const linked = ok.filter((d) => d.health.relayLink.configured);
  const down = linked.filter((d) => !d.health.relayLink.connected).map((d) => d.nodeId);
  if (ok.length === 0) return add('relay-link', 'warn', `no node answered: ${silent.join('; ')}`);
  if (linked.length === 0) return add('relay-link', silent.length > 0 ? 'warn' : 'pass', `not linked to a relay (independent mode)${silent.length > 0 ? `; no answer from ${silent.join('; ')}` : ''}`);
  if (down.length === linked.length) return add('relay-link', 'fail', `no node is connected to the relay (${down.join(', ')}): check platform.url, platform.token and the relay`);
  if (down.length > 0 || silent.length > 0) return add('relay-link', 'warn', `${linked.length - down.length} of ${linked.length} linked nodes connected${down.length > 0 ? `; not connected: ${down.join(', ')}` : ''}${silent.length > 0 ? `; no answer from ${silent.join('; ')}` : ''}`);
  add('relay-link', 'pass', `${linked.length} node(s) connected to the relay`);
}

async function checkSigning(pool: DatabasePool, config: SvcConfig, add: Add): Promise<void> {
  if (config.orchestrator.provenanceIssuer === undefined) return add('signing', 'skip', 'provenance signing is off (no orchestrator.provenanceIssuer)');
  const key = await activeKey(pool);
  if (key === undefined) return add('signing', 'fail', 'no active signing key: identity tokens defer; run "svc-admin signing-key generate"');
  if (key.sealedPrivateKey === null) return add('signing', 'pass', `active key ${key.kid} (${config.orchestrator.signerKind} custody, held outside the database)`);
  try {
    openWithAny((await adminMasterKeys(config)).all, key.sealedPrivateKey, sealingAd(key.kid));
    add('signing', 'pass', `active key ${key.kid} opens with the configured master key`);
  } catch (error) {
    add('signing', 'fail', `active key ${key.kid} does not open with the configured master key (${messageOf(error)}): set SVC_SECRET_KEY_OLD to the previous key and run "svc-admin rotate-key"`);
  }
}

async function checkAgents(pool: DatabasePool, add: Add): Promise<void> {
  const row = await pool.one(sqlTyped(Type.Object({ online: Type.Number(), known: Type.Number() }))`
    select count(*) filter (where connected)::int as online, count(*)::int as known from agents`);
  if (row.online === 0) return add('agents', 'warn', `no agent online (${row.known} known): jobs wait in the queue until one connects`);
  add('agents', 'pass', `${row.online} agent(s) online`);
}

export async function runDiagnose(config: SvcConfig, dbUrl: string | undefined, token: string | undefined): Promise<DiagnoseReport> {
  const checks: Check[] = [];
  const add: Add = (name, status, message) => void checks.push({ name, status, message });
  const guarded = async (name: string, fn: () => Promise<void>) => fn().catch((error: unknown) => add(name, 'fail', messageOf(error)));
  if (!dbUrl) {
    add('database', 'fail', 'no database address: pass --database-url or set SVC_DATABASE_URL');
    for (const name of DB_CHECKS) add(name, 'skip', 'no database');
  } else {
    try {
      await withPlainDatabase(dbUrl, async (pool) => {
        await pool.query(sql.unsafe`select 1`);
        add('database', 'pass', `connected to ${new URL(dbUrl).host}${new URL(dbUrl).pathname}`);
        await guarded('migrations', () => checkMigrations(pool, add));
        await guarded('relay-link', () => checkRelayLink(pool, config, token, add));
        await guarded('signing', () => checkSigning(pool, config, add));
        await guarded('agents', () => checkAgents(pool, add));
      });
    } catch (error) {
      if (checks.length === 0) {
        add('database', 'fail', `cannot connect: ${messageOf(error)}`);
        for (const name of DB_CHECKS) add(name, 'skip', 'the database is not reachable');
      } else add('database', 'fail', messageOf(error));
    }
  }
  await checkStorage(config, add);
  const order = ['database', 'migrations', 'storage', 'relay-link', 'signing', 'agents'];
  checks.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  return { status: overallStatus(checks), checks };
}

export default class Diagnose extends SvcCommand {
  static override description = 'Check database, migrations, storage, relay link, signing keys and agents; exit 0 all pass, 1 a warning, 2 a failure';
  static override flags = {
    ...databaseFlag,
    token: Flags.string({ description: 'admin token with scope cluster.read, to ask the nodes about their relay link (default: SVC_BOOTSTRAP_ADMIN_TOKEN)' }),
  };

  async run(): Promise<DiagnoseReport> {
    const { flags } = await this.parse(Diagnose);
    const config = await adminConfig();
    const report = await runDiagnose(config, flags['database-url'] ?? config.database.url, flags.token ?? config.secrets.bootstrapAdminToken);
    if (!this.jsonEnabled()) {
      for (const c of report.checks) this.log(checkLine(c, 11));
      this.log(summaryLine(report.status));
    }
    process.exitCode = checksExitCode(report.status);
    return report;
  }
}
