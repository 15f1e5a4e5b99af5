// An organization's trust policy (docs/trust-policy.md): one row per org in
// `org_trust_policies`; no row is the default policy. Small on purpose: every field is applied by
// the ingest trust step (ingest/steps/trust.ts).
//
//   forkPolicy  run | ignore | null. What a fork pull request does for a source that has not set
//               its own fork policy. Precedence: the source's own value, else the org's, else run.
//
// A change NOTIFYs TRUST_POLICY_CHANNEL (payload: the org id) in its transaction; every node's
// ingest drops its cached copy of that org's policy.
import { Type } from 'typebox';
import type { TrustPolicy, TrustPolicyPatch } from '../../../schemas/http/settings.ts';
import { notify, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

export const TRUST_POLICY_CHANNEL = 'svc_trust_policy';

export type ForkPolicy = 'run' | 'ignore';

/** The fork policy the trust step applies: the source's own, else the org's, else `run`. */
export function effectiveForkPolicy(source: ForkPolicy | null, org: ForkPolicy | null): ForkPolicy {
  return source ?? org ?? 'run';
}

const Row = Type.Object({
  fork_policy: Type.Union([Type.Literal('run'), Type.Literal('ignore'), Type.Null()]),
  updated_at: Type.String(),
  updated_by: Type.String(),
});
const ROW = sql.fragment`fork_policy, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at, updated_by`;

function toPolicy(org: string, row: { fork_policy: ForkPolicy | null; updated_at: string; updated_by: string } | null): TrustPolicy {
  const forkPolicy = row?.fork_policy ?? null;
  return { org, forkPolicy, effective: { forkPolicy: effectiveForkPolicy(null, forkPolicy) }, updatedAt: row?.updated_at ?? null, updatedBy: row?.updated_by ?? null };
}

export async function getTrustPolicy(pool: DatabasePool, org: string): Promise<TrustPolicy> {
  return toPolicy(org, await pool.maybeOne(sqlTyped(Row)`SELECT ${ROW} FROM org_trust_policies WHERE org_id = ${org}`));
}

/** Applies a validated patch; a field absent from the patch keeps its value. */
export async function patchTrustPolicy(pool: DatabasePool, org: string, patch: Omit<TrustPolicyPatch, 'org'>, by: string): Promise<TrustPolicy> {
  const setFork = patch.forkPolicy !== undefined;
  return pool.transaction(async (tx) => {
    const row = await tx.one(sqlTyped(Row)`
      INSERT INTO org_trust_policies (org_id, fork_policy, updated_by)
      VALUES (${org}, ${patch.forkPolicy ?? null}, ${by})
      ON CONFLICT (org_id) DO UPDATE SET
        fork_policy = CASE WHEN ${setFork} THEN EXCLUDED.fork_policy ELSE org_trust_policies.fork_policy END,
        updated_at = now(), updated_by = EXCLUDED.updated_by
      RETURNING ${ROW}`);
    await notify(tx, TRUST_POLICY_CHANNEL, org);
    return toPolicy(org, row);
  });
}
