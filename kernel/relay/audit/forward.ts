// Hands the relay's audit outbox and people-directory changes to the orchestrators (docs/audit.md).
// A pass sends each org's waiting records in batches to one connected orchestrator of that org
// and deletes them once it answered stored; an org with no orchestrator keeps them for later. A
// pass also sends the people queued for a directory update to every connected org. When an
// orchestrator connects, its org's whole directory is sent. Passes run on a timer and after writes.
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { messageOf } from '../../../core/errors.ts';
import { MAX_AUDIT_BATCH, MAX_DIRECTORY_BATCH, type DirectoryPerson, type RelayAuditRecord } from '../../../schemas/wire/relay.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { DashboardBroker } from '../dashboard/broker.ts';
import type { OrchestratorPool } from '../orchestrator-pool.ts';
import { listPeople, type Person } from '../people/store.ts';
import { rolesFor } from '../people/roles.ts';
import { onAuditWritten } from './record.ts';

export interface AuditForwarderOptions {
  db: DatabasePool;
  broker: DashboardBroker;
  pool: OrchestratorPool;
  logger: Logger;
  /** The kind of a configured provider id (`github`, `oidc`); the id itself when unknown. */
  providerKind(providerId: string): string;
  /** Timer between passes; default 2 s. 0: passes only after writes and connects (tests). */
  intervalMs?: number;
}

const OutboxRow = Type.Object({
  id: Type.String(),
  at: Type.String(),
  actor_kind: Type.Union([Type.Literal('person'), Type.Literal('token'), Type.Literal('system')]),
  actor_id: Type.String(),
  actor_name: Type.String(),
  action: Type.String(),
  target: Type.String(),
  outcome: Type.Union([Type.Literal('ok'), Type.Literal('refused'), Type.Literal('failed')]),
  detail: Type.String(),
});
const OrgRow = Type.Object({ org_id: Type.String() });
const PendingRow = Type.Object({ person_id: Type.String() });

/** Batches per org per pass: a long outage drains over a few passes, not in one burst. */
const MAX_BATCHES_PER_PASS = 20;

export class AuditForwarder {
  readonly #o: AuditForwarderOptions;
  readonly #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: AuditForwarderOptions) {
    this.#o = options;
    const interval = options.intervalMs ?? 2_000;
    if (interval > 0) {
      this.#timer = setInterval(() => this.kick(), interval);
      this.#timer.unref();
    }
    onAuditWritten(() => this.kick());
  }

  /** Starts a pass (or one more after the running one). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.pass()
      .catch((error: unknown) => this.#o.logger.warn({ err: messageOf(error) }, 'audit forward pass failed; the records wait for the next'))
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /** Waits for the running pass (tests, stop). */
  async settled(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** One pass: the outbox of every org with an orchestrator, then queued directory entries. */
  async pass(): Promise<void> {
    const orgs = await this.#o.db.any(sqlTyped(OrgRow)`select distinct org_id from relay_audit_outbox`);
    for (const { org_id: orgId } of orgs) if (this.#connected(orgId)) await this.#flushOrg(orgId);
    await this.#flushPeople();
  }

  #connected(orgId: string): boolean {
    return this.#o.pool.connections(orgId).some((c) => !c.closed);
  }

  async #flushOrg(orgId: string): Promise<void> {
    for (let i = 0; i < MAX_BATCHES_PER_PASS; i++) {
      const rows = await this.#o.db.any(sqlTyped(OutboxRow)`
        select id::text as id, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, actor_kind, actor_id, actor_name, action, target, outcome, detail
        from relay_audit_outbox where org_id = ${orgId} order by at, id limit ${MAX_AUDIT_BATCH}`);
      if (rows.length === 0) return;
      const records: RelayAuditRecord[] = rows.map((r) => ({
        id: r.id,
        at: r.at,
        actor: { kind: r.actor_kind, id: r.actor_id, name: r.actor_name },
        action: r.action,
        target: r.target,
        outcome: r.outcome,
        detail: r.detail,
      }));
      const answer = await this.#o.broker.request(orgId, { type: 'audit.record.request', orgId, records });
      if (answer.error !== undefined) {
        this.#o.logger.warn({ orgId, code: answer.error.code, message: answer.error.message }, 'the orchestrator refused audit records; they stay in the outbox');
        return;
      }
      await this.#o.db.query(sql.unsafe`delete from relay_audit_outbox where id = any(${sql.array(rows.map((r) => r.id), 'uuid')})`);
      if (rows.length < MAX_AUDIT_BATCH) return;
    }
  }

  async #entry(person: Person & { disabled: boolean }, orgId: string): Promise<DirectoryPerson> {
    return {
      personId: person.id,
      name: person.displayName.slice(0, 200) || person.login,
      provider: this.#o.providerKind(person.provider),
      login: person.login,
      teams: person.groups.slice(0, 500),
      roles: person.disabled ? [] : await rolesFor(this.#o.db, person.id, orgId),
      disabled: person.disabled,
    };
  }

  /** Sends `people` to one orchestrator of `orgId`, in batches. */
  async #send(orgId: string, people: ReadonlyArray<Person & { disabled: boolean }>): Promise<void> {
    for (let i = 0; i < people.length; i += MAX_DIRECTORY_BATCH) {
      const batch = await Promise.all(people.slice(i, i + MAX_DIRECTORY_BATCH).map((p) => this.#entry(p, orgId)));
      const answer = await this.#o.broker.request(orgId, { type: 'people.sync.request', orgId, people: batch });
      if (answer.error !== undefined) throw new Error(`people.sync refused by the orchestrator of ${orgId}: ${answer.error.message}`);
    }
  }

  async #flushPeople(): Promise<void> {
    const pending = await this.#o.db.any(sqlTyped(PendingRow)`select person_id::text as person_id from relay_people_sync_pending order by queued_at limit 500`);
    if (pending.length === 0) return;
    const ids = new Set(pending.map((p) => p.person_id));
    const people = (await listPeople(this.#o.db)).filter((p) => ids.has(p.id));
    const orgs = [...new Set(this.#o.pool.all().filter((c) => !c.closed).map((c) => c.orgId))];
    for (const orgId of orgs) await this.#send(orgId, people);
    // Only after every connected org has them; an org connecting later gets its whole directory.
    await this.#o.db.query(sql.unsafe`delete from relay_people_sync_pending where person_id = any(${sql.array([...ids], 'uuid')})`);
  }

  /** An orchestrator of `orgId` connected: its whole directory, then the org's waiting records. */
  async connected(orgId: string): Promise<void> {
    try {
      await this.#send(orgId, await listPeople(this.#o.db));
    } catch (error) {
      this.#o.logger.warn({ orgId, err: messageOf(error) }, 'people directory not sent; it is sent again at the next connect or change');
    }
    this.kick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.settled();
  }
}
