// Shared set-up for relay tests: a real relay on 127.0.0.1 over a test database, provisioned
// orgs, fake orchestrators built from the real relay link, and webhook senders over real HTTP.
import { pino } from 'pino';
import type { Logger } from 'pino';
import { startRelay, provisionOrg, migrateRelay, type Relay, type StartRelayOptions } from '../../../kernel/relay/index.ts';
import { connectRelay, type RelayDeliveryResult, type RelayLink } from '../../../kernel/orchestrator/relay-link/index.ts';
import type { RelaySource, RelayToOrchestrator, WebhookDeliver } from '../../../schemas/wire/relay.ts';
import type { DatabasePool } from '../../../kernel/services/db/index.ts';
import type { Test } from '../../fixtures/db.ts';

export const quietLogger: Logger = pino({ level: process.env['SVC_TEST_LOG_LEVEL'] ?? 'silent' });

export interface RelayHandle {
  relay: Relay;
  url: string;
  stop(): Promise<void>;
}

/** Starts a relay on the test database; stopped at teardown (idempotent). */
export async function startTestRelay(t: Test, dbUrl: string, options: Omit<StartRelayOptions, 'env'> & { env?: Record<string, string> } = {}): Promise<RelayHandle> {
  const relay = await startRelay({
    logger: quietLogger,
    ...options,
    env: {
      SVC_RELAY_DATABASE_URL: dbUrl,
      SVC_RELAY_PORT: '0',
      SVC_RELAY_HOST: '127.0.0.1',
      SVC_DATA_DIR: '/nonexistent-relay-tests-use-a-url',
      ...options.env,
    },
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= relay.stop());
  t.teardown(stop);
  return { relay, url: relay.url, stop };
}

export async function newOrg(pool: DatabasePool, orgId: string): Promise<string> {
  await migrateRelay(pool, quietLogger);
  return (await provisionOrg(pool, orgId)).token;
}

export const githubSource = (target: string): RelaySource => ({ routingKey: `github:${target}`, providerKind: 'github' });

export interface FakeOrchestrator {
  link: RelayLink;
  received: WebhookDeliver[];
  close(): Promise<void>;
}

export async function fakeOrchestrator(
  t: Test,
  url: string,
  token: string,
  options: {
    id?: string;
    sources?: RelaySource[];
    onDelivery?: (d: WebhookDeliver) => Promise<RelayDeliveryResult> | RelayDeliveryResult;
    /** Relay messages other than deliveries (dashboard requests), as the link hands them over. */
    onMessage?: (message: RelayToOrchestrator) => void;
    wait?: boolean;
  } = {},
): Promise<FakeOrchestrator> {
  const received: WebhookDeliver[] = [];
  const link = connectRelay({
    platformUrl: url,
    platformToken: token,
    orchestratorId: options.id ?? 'orch-test',
    sources: () => options.sources ?? [githubSource('100')],
    logger: quietLogger,
    minReconnectDelayMs: 50,
    maxReconnectDelayMs: 500,
    ...(options.onMessage !== undefined ? { onMessage: options.onMessage } : {}),
    onDelivery: async (d) => {
      received.push(d);
      return options.onDelivery ? options.onDelivery(d) : { result: 'accepted' };
    },
  });
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= link.close());
  t.teardown(close);
  if (options.wait !== false) await link.waitConnected(60_000);
  return { link, received, close };
}

export interface SendOptions {
  kind?: string;
  body?: string | Buffer;
  target?: string;
  delivery?: string;
  event?: string;
  headers?: Record<string, string>;
  /** Use GitHub's own header names instead of X-Provider-*. */
  github?: boolean;
}

let counter = 0;
export function uniqueId(prefix = 'd'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now()}-${counter}`;
}

export async function sendWebhook(url: string, orgId: string, options: SendOptions = {}): Promise<{ status: number; headers: Headers; json: any }> {
  const names = options.github
    ? { target: 'x-github-hook-installation-target-id', delivery: 'x-github-delivery', event: 'x-github-event' }
    : { target: 'x-provider-hook-installation-target-id', delivery: 'x-provider-delivery', event: 'x-provider-event' };
  const headers: Record<string, string> = { 'content-type': 'application/json', [names.event]: options.event ?? 'push' };
  if (options.target !== '') headers[names.target] = options.target ?? '100';
  headers[names.delivery] = options.delivery ?? uniqueId();
  Object.assign(headers, options.headers);
  const body = options.body ?? JSON.stringify({ n: uniqueId('body') });
  const kind = options.kind ?? 'github';
  const response = await fetch(`${url}/webhook/${orgId}/${kind}`, { method: 'POST', headers, body });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, headers: response.headers, json };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it is true (bounded). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 60_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}
