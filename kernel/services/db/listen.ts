// LISTEN/NOTIFY. slonik has no LISTEN API, so a raw pg client holds the subscriptions; it
// reconnects with capped backoff and re-LISTENs. Notifications sent while it was disconnected are
// lost: subscribers hear about the gap and re-read what they watch.
//
// The listeners of one process share one such client per database (`createListener` hands out
// views of it). PostgreSQL signals every backend that LISTENs in a database on each committed
// NOTIFY there, whatever its channels: each one wakes, reads the notification queue in a
// transaction of its own and goes back to sleep. With a connection per subsystem the
// orchestrator had nine such backends, so every wake-up under webhook load woke nine processes
// on a machine whose cores were already the bottleneck (issue 19); now it wakes one.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { sql, type CommonQueryMethods } from 'slonik';
import { InputError, messageOf } from '../../../core/errors.ts';
import { checkDatabaseUrl, redactUrl, unavailableError } from './errors.ts';

export type NotificationHandler = (payload: string, channel: string) => void;
export type GapHandler = (channels: readonly string[]) => void;

export interface ListenerOptions {
  url: string;
  logger: Logger;
  /** First reconnect delay (default 100 ms); doubles per failure up to maxBackoffMs. */
  minBackoffMs?: number;
  /** Default 5 s. */
  maxBackoffMs?: number;
}

export interface Listener {
  /** Subscribes; the first handler of a channel issues LISTEN. Resolves once LISTEN ran (or will run on reconnect). */
  listen(channel: string, handler: NotificationHandler): Promise<void>;
  /** Removes one handler, or all of the channel's; the last one issues UNLISTEN. */
  unlisten(channel: string, handler?: NotificationHandler): Promise<void>;
  /** Called after each reconnect with the channels re-LISTENed: notifications may have been missed. */
  onGap(handler: GapHandler): () => void;
  readonly connected: boolean;
  /**
   * Reconnect attempts that failed since the connection was lost (0 while connected): a test
   * reads "no reconnect while the server is down" after a few of them instead of a sleep.
   */
  readonly failedReconnects: number;
  close(): Promise<void>;
}

/** PostgreSQL's default maximum NOTIFY payload is 8000 bytes. */
export const MAX_NOTIFY_PAYLOAD_BYTES = 7999;

export function checkChannel(channel: unknown): string {
  if (typeof channel !== 'string' || channel === '' || Buffer.byteLength(channel) > 63 || channel.includes('\0')) {
    throw new InputError('SVC_ERR_DB_CHANNEL_INVALID', 'a notification channel must be a non-empty string of at most 63 bytes');
  }
  return channel;
}

/** Tells each gap handler which channels may have missed notifications; one failing does not stop the rest. */
function reportGap(handlers: ReadonlySet<GapHandler>, listened: readonly string[], logger: Logger): void {
  for (const handler of [...handlers]) {
    try {
      handler(listened);
    } catch (error) {
      logger.error({ err: error }, 'gap handler failed');
    }
  }
}

/** Adds `item` to `set`; the returned function takes it out again. */
function added<T>(set: Set<T>, item: T): () => void {
  set.add(item);
  return () => {
    set.delete(item);
  };
}

/**
 * The payload of a wake-up NOTIFY whose sender already woke its own process's listeners
 * (`wakeLocalListeners`): this prefix, then the tokens of the connections woken, comma-separated.
 * Those connections drop it; every other listener hears an ordinary empty-payload wake-up.
 */
export const LOCAL_WAKE_PREFIX = 'svc-wake:';

/** An open shared connection's own side: its token, and an in-process wake of its handlers. */
interface OpenConnection extends Listener {
  readonly token: string;
  wakeHere(channels: readonly string[]): void;
}

/** One process's connection for a database and backoff, and how many listeners use it. */
interface SharedConnection {
  readonly url: string;
  readonly listener: OpenConnection;
  users: number;
  closing: boolean;
}

const sharedConnections = new Map<string, Promise<SharedConnection>>();
/** The shared connections opened and not yet closing, for in-process wake-ups. */
const liveConnections = new Set<SharedConnection>();

/**
 * Wakes, in this process and without a round trip, the handlers of `channels` on every shared
 * connection to `url`, on the next turn of the event loop (never inside the caller's stack).
 * Returns those connections' tokens, for the NOTIFY that tells the other processes
 * (`LOCAL_WAKE_PREFIX`): the connections named there skip it, so nobody hears a wake-up twice.
 */
export function wakeLocalListeners(url: string, channels: readonly string[]): string[] {
  const tokens: string[] = [];
  for (const connection of liveConnections) {
    if (connection.url !== url || connection.closing) continue;
    tokens.push(connection.listener.token);
    connection.listener.wakeHere(channels);
  }
  return tokens;
}

/**
 * A listener of its own (its handlers, its gap handlers, its `close`) on the process's shared
 * connection for `options.url`, opened by the first one; fails with SVC_ERR_DB_UNAVAILABLE when
 * that first connect fails. The connection ends when its last listener closes.
 */
export async function createListener(options: ListenerOptions): Promise<Listener> {
  checkDatabaseUrl(options.url);
  const key = JSON.stringify([options.url, options.minBackoffMs ?? null, options.maxBackoffMs ?? null]);
  for (;;) {
    let opening = sharedConnections.get(key);
    if (opening === undefined) {
      const opened = openListener(options).then((listener): SharedConnection => {
        const shared: SharedConnection = { url: options.url, listener, users: 0, closing: false };
        liveConnections.add(shared);
        return shared;
      });
      opening = opened;
      sharedConnections.set(key, opened);
      opened.catch(() => {
        if (sharedConnections.get(key) === opened) sharedConnections.delete(key);
      });
    }
    const connection = await opening;
    // Its last listener closed it while this call waited: open a new one.
    if (connection.closing) continue;
    connection.users += 1;
    return viewOf(connection, options.logger, () => {
      connection.users -= 1;
      if (connection.users > 0) return false;
      connection.closing = true;
      liveConnections.delete(connection);
      if (sharedConnections.get(key) === opening) sharedConnections.delete(key);
      return true;
    });
  }
}

/**
 * One user's listener on a shared connection. Its handlers are wrapped, so the same function
 * given by two users is two subscriptions, and each user's `unlisten` and `close` remove only
 * its own; its gap handlers hear the channels it listens to.
 */
function viewOf(connection: SharedConnection, parentLogger: Logger, release: () => boolean): Listener {
  const shared = connection.listener;
  const logger = parentLogger.child({ component: 'db-listen' });
  const mine = new Map<string, Map<NotificationHandler, NotificationHandler>>();
  const gapHandlers = new Set<GapHandler>();
  let closed = false;
  const offGap = shared.onGap(() => reportGap(gapHandlers, [...mine.keys()], logger));
  const remove = async (channel: string, handler?: NotificationHandler): Promise<void> => {
    const wrappers = mine.get(channel);
    if (wrappers === undefined) return;
    const removed = handler === undefined ? [...wrappers.values()] : [wrappers.get(handler)].filter((w) => w !== undefined);
    if (handler === undefined) wrappers.clear();
    else wrappers.delete(handler);
    if (wrappers.size === 0) mine.delete(channel);
    for (const wrapper of removed) await shared.unlisten(channel, wrapper);
  };
  return {
    get connected() {
      return !closed && shared.connected;
    },
    get failedReconnects() {
      return shared.failedReconnects;
    },
    async listen(channel, handler) {
      checkChannel(channel);
      if (closed) throw new InputError('SVC_ERR_DB_LISTENER_CLOSED', 'this listener is closed');
      if (typeof handler !== 'function') throw new InputError('SVC_ERR_DB_LISTENER_HANDLER', 'listen needs a handler function');
      let wrappers = mine.get(channel);
      if (wrappers === undefined) {
        wrappers = new Map();
        mine.set(channel, wrappers);
      }
      if (wrappers.has(handler)) return;
      const wrapper: NotificationHandler = (payload, on) => handler(payload, on);
      wrappers.set(handler, wrapper);
      await shared.listen(channel, wrapper);
    },
    async unlisten(channel, handler) {
      checkChannel(channel);
      await remove(channel, handler);
    },
    onGap(handler) {
      return added(gapHandlers, handler);
    },
    async close() {
      if (closed) return;
      closed = true;
      offGap();
      gapHandlers.clear();
      const last = release();
      if (last) {
        mine.clear();
        await shared.close();
        return;
      }
      for (const channel of [...mine.keys()]) await remove(channel).catch(() => undefined);
    },
  };
}

/** Connects one client; fails with SVC_ERR_DB_UNAVAILABLE when the first connect fails. */
async function openListener(options: ListenerOptions): Promise<OpenConnection> {
  const logger = options.logger.child({ component: 'db-listen' });
  const minBackoff = Math.max(1, options.minBackoffMs ?? 100);
  const maxBackoff = Math.max(minBackoff, options.maxBackoffMs ?? 5_000);
  const channels = new Map<string, Set<NotificationHandler>>();
  const gapHandlers = new Set<GapHandler>();
  let client: pg.Client | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  // Connections that died before being adopted as `client` (the loss event found no owner).
  const dead = new WeakSet<pg.Client>();
  const adopt = (next: pg.Client): void => {
    client = next;
    if (dead.has(next)) handleLoss(new Error('connection lost while re-subscribing'));
  };

  const token = randomBytes(9).toString('base64url');
  const deliver = (channel: string, payload: string): void => {
    const handlers = channels.get(channel);
    if (handlers === undefined) return;
    for (const handler of [...handlers]) {
      try {
        handler(payload, channel);
      } catch (error) {
        logger.error({ err: error, channel }, 'notification handler failed');
      }
    }
  };
  const dispatch = (message: pg.Notification): void => {
    const payload = message.payload ?? '';
    if (!payload.startsWith(LOCAL_WAKE_PREFIX)) return deliver(message.channel, payload);
    // A wake-up whose sender woke this connection's handlers in-process already.
    if (payload.slice(LOCAL_WAKE_PREFIX.length).split(',').includes(token)) return;
    deliver(message.channel, '');
  };
  // Channels woken in-process, delivered together on the next turn of the loop.
  const wokenHere = new Set<string>();
  const deliverWokenHere = (): void => {
    const woken = [...wokenHere];
    wokenHere.clear();
    if (!closed) for (const channel of woken) deliver(channel, '');
  };

  const open = async (): Promise<pg.Client> => {
    const next = new pg.Client({
      connectionString: options.url,
      keepAlive: true,
      connectionTimeoutMillis: 10_000,
      application_name: 'svc-listen',
    });
    let lost = false;
    const onLost = (error?: Error): void => {
      if (lost) return;
      lost = true;
      dead.add(next);
      if (client === next) handleLoss(error);
    };
    next.on('error', onLost);
    next.on('end', () => onLost());
    next.on('notification', dispatch);
    try {
      await next.connect();
      for (const channel of channels.keys()) await next.query(`listen ${next.escapeIdentifier(channel)}`);
    } catch (error) {
      lost = true;
      await next.end().catch(() => undefined);
      throw error;
    }
    return next;
  };

  const handleLoss = (error?: Error): void => {
    client = undefined;
    if (closed) return;
    logger.warn({ err: error, url: redactUrl(options.url) }, 'notification connection lost; reconnecting');
    schedule();
  };

  const schedule = (): void => {
    if (closed || timer !== undefined) return;
    const delay = Math.min(maxBackoff, minBackoff * 2 ** Math.min(failures, 20));
    const jittered = Math.round(delay * (0.8 + Math.random() * 0.4));
    timer = setTimeout(() => {
      timer = undefined;
      void reconnect();
    }, jittered);
  };

  const reconnect = async (): Promise<void> => {
    if (closed) return;
    let next: pg.Client;
    try {
      next = await open();
    } catch (error) {
      failures += 1;
      logger.warn({ err: error, attempt: failures }, 'notification reconnect failed');
      schedule();
      return;
    }
    if (closed) {
      await next.end().catch(() => undefined);
      return;
    }
    adopt(next);
    if (client !== next) return;
    failures = 0;
    const listened = [...channels.keys()];
    logger.info({ channels: listened }, 'notification connection re-established');
    reportGap(gapHandlers, listened, logger);
  };

  try {
    adopt(await open());
  } catch (cause) {
    throw unavailableError(options.url, cause);
  }

  return {
    token,
    wakeHere(woken) {
      if (closed) return;
      const first = wokenHere.size === 0;
      for (const channel of woken) wokenHere.add(channel);
      if (first && wokenHere.size > 0) setImmediate(deliverWokenHere);
    },
    get connected() {
      return client !== undefined;
    },
    get failedReconnects() {
      return failures;
    },
    async listen(channel, handler) {
      checkChannel(channel);
      if (closed) throw new InputError('SVC_ERR_DB_LISTENER_CLOSED', 'this listener is closed');
      if (typeof handler !== 'function') throw new InputError('SVC_ERR_DB_LISTENER_HANDLER', 'listen needs a handler function');
      let handlers = channels.get(channel);
      if (handlers === undefined) {
        handlers = new Set();
        channels.set(channel, handlers);
      }
      const first = handlers.size === 0;
      handlers.add(handler);
      const current = client;
      if (first && current !== undefined) {
        try {
          await current.query(`listen ${current.escapeIdentifier(channel)}`);
        } catch (error) {
          // A connection lost mid-call re-LISTENs every channel on reconnect.
          if (client === current) throw error;
          logger.debug({ err: messageOf(error), channel }, 'LISTEN deferred to reconnect');
        }
      }
    },
    async unlisten(channel, handler) {
      checkChannel(channel);
      const handlers = channels.get(channel);
      if (handlers === undefined) return;
      if (handler === undefined) handlers.clear();
      else handlers.delete(handler);
      if (handlers.size > 0) return;
      channels.delete(channel);
      const current = client;
      if (current !== undefined) {
        await current.query(`unlisten ${current.escapeIdentifier(channel)}`).catch((error: unknown) => {
          if (client === current) throw error;
        });
      }
    },
    onGap(handler) {
      return added(gapHandlers, handler);
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      const current = client;
      client = undefined;
      channels.clear();
      gapHandlers.clear();
      if (current !== undefined) await current.end().catch(() => undefined);
    },
  };
}

/** Transactions whose wake-ups (empty payloads) are collected here and sent after the commit (wakeups.ts). */
const deferred = new WeakMap<CommonQueryMethods, Set<string>>();

/**
 * From now on, `notify(tx, channel, '')` on this transaction adds `channel` to `channels` instead
 * of queueing a NOTIFY; the caller sends them once the transaction committed (`WakeupSender`).
 * Notifications with a payload still go through the transaction.
 */
export function collectWakeups(tx: CommonQueryMethods, channels: Set<string>): void {
  deferred.set(tx, channels);
}

/**
 * NOTIFY through a slonik connection. Inside `pool.transaction(async (tx) => { ...; await notify(tx, ...) })`
 * it is delivered only if the transaction commits, so insert and notification are one unit (or,
 * for a wake-up on a transaction given to `collectWakeups`, sent right after that commit).
 */
export async function notify(connection: CommonQueryMethods, channel: string, payload: string | object = ''): Promise<void> {
  checkChannel(channel);
  const collecting = payload === '' ? deferred.get(connection) : undefined;
  if (collecting !== undefined) {
    collecting.add(channel);
    return;
  }
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
  if (typeof text !== 'string') throw new InputError('SVC_ERR_DB_NOTIFY_PAYLOAD', 'a notification payload must be a string or a JSON-serialisable object');
  if (Buffer.byteLength(text) > MAX_NOTIFY_PAYLOAD_BYTES) {
    throw new InputError(
      'SVC_ERR_DB_NOTIFY_PAYLOAD',
      `a notification payload must be under 8000 bytes (got ${Buffer.byteLength(text)}); send an id and let listeners read the row`,
    );
  }
  await connection.query(sql.unsafe`select pg_notify(${channel}, ${text})`);
}
