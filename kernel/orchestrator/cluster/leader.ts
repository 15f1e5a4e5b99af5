// Leader election: the node holding a session-level PostgreSQL advisory lock on its own connection
// leads. PostgreSQL releases the lock when that connection ends, so a leader that dies (SIGKILL,
// lost network) stops leading as soon as the server notices, and the next node to try takes it.
// A connection error drops leadership at once, before anything else can assume it is still held.
//
// Advisory locks are per PostgreSQL server, while a cluster is the orchestrators sharing one
// database: the lock key is derived from the database name, so two clusters whose databases live
// on the same server (or two test databases) each have their own leader.
import pg from 'pg';
import type { Logger } from 'pino';
import { messageOf } from '../../../core/errors.ts';

/** The 64-bit advisory lock key of the leader, as SQL: derived from the session's database. */
export const LEADER_LOCK_KEY_SQL = "('x' || substr(md5('svc-cluster:leader:' || current_database()), 1, 16))::bit(64)::bigint";

export interface LeaderOptions {
  url: string;
  logger: Logger;
  /** How often a follower tries to take the lock (and a leader checks its connection). */
  intervalMs: number;
  onChange?(leader: boolean): void;
}

export class LeaderElection {
  readonly #o: LeaderOptions;
  #client: pg.Client | null = null;
  #leader = false;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  #busy: Promise<void> | null = null;
  #attempts = 0;

  constructor(options: LeaderOptions) {
    this.#o = options;
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  /**
   * Attempts completed (a follower's try for the lock, a leader's check of its session): a test
   * reads "the follower still follows" after two more of them instead of after a sleep.
   */
  get attempts(): number {
    return this.#attempts;
  }

  async start(): Promise<void> {
    await this.#attempt();
    this.#timer = setInterval(() => {
      if (this.#busy === null && !this.#stopped) this.#busy = this.#attempt().finally(() => (this.#busy = null));
    }, this.#o.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#busy;
    this.#set(false);
    const client = this.#client;
    this.#client = null;
    // Closing the session releases the lock for the next leader at once.
    await client?.end().catch(() => undefined);
  }

  #set(leader: boolean): void {
    if (leader === this.#leader) return;
    this.#leader = leader;
    this.#o.logger.info({ leader }, leader ? 'this node is the cluster leader' : 'this node is no longer the cluster leader');
    this.#o.onChange?.(leader);
  }

  #drop(client: pg.Client, error: unknown): void {
    if (this.#client !== client) return;
    this.#client = null;
    this.#set(false);
    this.#o.logger.warn({ err: messageOf(error) }, 'leader election connection lost');
    client.end().catch(() => undefined);
  }

  async #connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.#o.url, application_name: 'svc-leader-election' });
    client.on('error', (error) => this.#drop(client, error));
    await client.connect();
    this.#client = client;
    return client;
  }

  async #attempt(): Promise<void> {
    try {
      const client = this.#client ?? (await this.#connect());
      if (this.#stopped) return;
      if (this.#leader) {
        // Still ours while the session lives; a query proves the session does.
        await client.query('SELECT 1');
        return;
      }
      const result = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(${LEADER_LOCK_KEY_SQL}) AS locked`);
      if (result.rows[0]?.locked === true) this.#set(true);
    } catch (error) {
      const client = this.#client;
      if (client !== null) this.#drop(client, error);
      else this.#o.logger.warn({ err: messageOf(error) }, 'leader election could not reach the database');
    } finally {
      this.#attempts += 1;
    }
  }
}
