// Quarantine (docs/test-results.md): an org's list of tests whose failures do not fail their
// job. An entry covers one test (suite and name) in one repository, or in every repository of the
// org (repository ''). Entering records who, why and when; leaving keeps the row and records
// who, why and when again, so the list's history stays visible. Applies to results recorded
// after the change: a stored result keeps the quarantine flag it was recorded with.
import { randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { ConflictError, InputError, NotFoundError } from '../../../core/errors.ts';
import type { QuarantineView } from '../../../schemas/wire/relay-tests.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';

const N = Type.Union([Type.String(), Type.Null()]);
const Row = Type.Object({
  id: Type.String(),
  repository: Type.String(),
  suite: Type.String(),
  name: Type.String(),
  reason: Type.String(),
  added_by: Type.String(),
  added_at: Type.String(),
  removed_by: N,
  removed_reason: N,
  removed_at: N,
});
type Row = Static<typeof Row>;

const COLUMNS = sql.fragment`id::text, repository, suite, name, reason, added_by,
  to_char(added_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS added_at, removed_by, removed_reason,
  to_char(removed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS removed_at`;

function view(r: Row): QuarantineView {
  return {
    id: r.id,
    repository: r.repository === '' ? null : r.repository,
    suite: r.suite,
    name: r.name,
    reason: r.reason,
    addedBy: r.added_by,
    addedAt: r.added_at,
    removedBy: r.removed_by,
    removedReason: r.removed_reason,
    removedAt: r.removed_at,
  };
}

export interface QuarantineKey {
  /** Absent: every repository of the org. */
  repository?: string;
  suite: string;
  name: string;
}

function checkKey(key: QuarantineKey, reason: string): void {
  if (key.name.trim() === '') throw new InputError('SVC_ERR_TESTS_QUARANTINE_INVALID', 'a quarantined test needs its name');
  if (reason.trim() === '') throw new InputError('SVC_ERR_TESTS_QUARANTINE_INVALID', 'say why (--reason): the quarantine list records it');
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(key.suite + key.name + reason)) {
    throw new InputError('SVC_ERR_TESTS_QUARANTINE_INVALID', 'the suite, name and reason must not hold control characters');
  }
}

export async function quarantineEntries(db: CommonQueryMethods, orgId: string, options: { repository?: string; includeRemoved: boolean }): Promise<QuarantineView[]> {
  const repo = options.repository === undefined ? sql.fragment`` : sql.fragment`AND repository IN ('', ${options.repository})`;
  const active = options.includeRemoved ? sql.fragment`` : sql.fragment`AND removed_at IS NULL`;
  const rows = await db.any(sqlTyped(Row)`
    SELECT ${COLUMNS} FROM test_quarantine WHERE org_id = ${orgId} ${repo} ${active}
    ORDER BY (removed_at IS NULL) DESC, coalesce(removed_at, added_at) DESC LIMIT 1000`);
  return rows.map(view);
}

export async function addQuarantine(db: CommonQueryMethods, orgId: string, key: QuarantineKey, reason: string, actor: string): Promise<QuarantineView> {
  checkKey(key, reason);
  const row = await db.maybeOne(sqlTyped(Row)`
    INSERT INTO test_quarantine (id, org_id, repository, suite, name, reason, added_by)
    VALUES (${randomUUID()}, ${orgId}, ${key.repository ?? ''}, ${key.suite}, ${key.name}, ${reason.trim()}, ${actor})
    ON CONFLICT (org_id, repository, suite, name) WHERE removed_at IS NULL DO NOTHING
    RETURNING ${COLUMNS}`);
  if (row === null) {
    throw new ConflictError('SVC_ERR_TESTS_QUARANTINE_EXISTS', `test ${JSON.stringify(key.name)} (suite ${JSON.stringify(key.suite)}) is already quarantined in ${key.repository ?? 'the whole org'}`);
  }
  return view(row);
}

export async function removeQuarantine(db: CommonQueryMethods, orgId: string, key: QuarantineKey, reason: string, actor: string): Promise<QuarantineView> {
  checkKey(key, reason);
  const row = await db.maybeOne(sqlTyped(Row)`
    UPDATE test_quarantine SET removed_at = clock_timestamp(), removed_by = ${actor}, removed_reason = ${reason.trim()}
    WHERE org_id = ${orgId} AND repository = ${key.repository ?? ''} AND suite = ${key.suite} AND name = ${key.name} AND removed_at IS NULL
    RETURNING ${COLUMNS}`);
  if (row === null) {
    throw new NotFoundError('SVC_ERR_TESTS_QUARANTINE_NOT_FOUND', `test ${JSON.stringify(key.name)} (suite ${JSON.stringify(key.suite)}) is not quarantined in ${key.repository ?? 'the whole org'}`);
  }
  return view(row);
}
