// Helpers for identity tests: orchestrator schema, run/job rows inserted directly, master keys,
// and a db custody bound to the key table.
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { createKeyVault } from '../../../../kernel/orchestrator/identity/key-store.ts';
import type { MasterKeys } from '../../../../kernel/services/crypto/master-keys.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { moveStatus } from '../../../fixtures/runs.ts';
import { DbCustody } from '../../../../plugins/custody/db/index.ts';

export const silent = pino({ level: process.env['SVC_TEST_LOG_LEVEL'] ?? 'silent' });

export async function migrateOrchestrator(pool: DatabasePool): Promise<void> {
  await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: silent });
}

export function masterKeys(current: Buffer = randomBytes(32), old?: Buffer): MasterKeys {
  const all: MasterKeys['all'] = [{ name: 'current', key: current }];
  if (old) all.push({ name: 'old', key: old });
  return old ? { current, old, all } : { current, all };
}

export function boundDbCustody(pool: DatabasePool, keys: MasterKeys, activeCacheMs = 0): DbCustody {
  const custody = new DbCustody({ activeCacheMs });
  custody.bind(createKeyVault(pool, keys, 'db'));
  return custody;
}

export interface RunFields {
  org_id: string;
  provider: string;
  repository: string;
  workflow_repository: string;
  workflow: string;
  sha: string;
  ref: string | null;
  event_name: string;
  subject_kind: 'ref' | 'pull_request';
  actor: string;
  trust_tier: 'trusted' | 'unknown' | 'unresolved';
  is_fork: 'true' | 'false' | 'unresolved';
  head_ref: string;
  head_repository: string;
  source_origin: 'triggered' | 'run-remote';
  parent_run_id: string | null;
}

export const PUSH_RUN: RunFields = {
  org_id: 'org-1',
  provider: 'github',
  repository: 'acme/widgets',
  workflow_repository: 'acme/widgets',
  workflow: 'ci',
  sha: 'a'.repeat(40),
  ref: 'refs/heads/main',
  event_name: 'push',
  subject_kind: 'ref',
  actor: 'alice',
  trust_tier: 'trusted',
  is_fork: 'false',
  head_ref: '',
  head_repository: '',
  source_origin: 'triggered',
  parent_run_id: null,
};

export const SAME_REPO_PR: RunFields = {
  ...PUSH_RUN,
  ref: 'refs/heads/main',
  event_name: 'pull_request:opened',
  subject_kind: 'pull_request',
  head_ref: 'feature-x',
  head_repository: 'acme/widgets',
};

export const FORK_PR: RunFields = {
  ...SAME_REPO_PR,
  actor: 'mallory',
  trust_tier: 'unknown',
  is_fork: 'true',
  head_ref: 'evil',
  head_repository: 'mallory/widgets',
};

export async function insertRunJob(
  pool: DatabasePool,
  run: Partial<RunFields> = {},
  job: { agentId?: string | null; status?: string } = {},
): Promise<{ runId: string; jobId: string; agentId: string }> {
  const r = { ...PUSH_RUN, ...run };
  const runId = randomUUID();
  const jobId = randomUUID();
  const agentId = job.agentId === undefined ? 'agent-1' : (job.agentId ?? '');
  await pool.query(sql.unsafe`
    INSERT INTO runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, sha, ref, event_name, subject_kind,
                      actor, trust_tier, is_fork, head_ref, head_repository, source_origin, status, content_hash, lock_entry, event,
                      parent_run_id, original_run_id)
    VALUES (${runId}, ${r.org_id}, ${r.provider}, ${r.repository}, ${r.workflow_repository}, ${r.workflow}, ${r.sha}, ${r.sha}, ${r.ref},
            ${r.event_name}, ${r.subject_kind}, ${r.actor}, ${r.trust_tier}, ${r.is_fork}, ${r.head_ref}, ${r.head_repository},
            ${r.source_origin}, 'queued', ${'c'.repeat(64)}, '{}'::jsonb, '{}'::jsonb, ${r.parent_run_id}, ${r.parent_run_id})`);
  await moveStatus(pool, 'runs', runId, 'running');
  await pool.query(sql.unsafe`
    INSERT INTO jobs (id, run_id, org_id, name, display_name, status, agent_id)
    VALUES (${jobId}, ${runId}, ${r.org_id}, 'build', 'build', 'queued', ${job.agentId === null ? null : agentId})`);
  await moveStatus(pool, 'jobs', jobId, job.status ?? 'running');
  return { runId, jobId, agentId };
}
