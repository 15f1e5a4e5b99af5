// The post-receive hook itself: first the outbox (pushes an earlier run could not deliver, in
// push order), then for each pushed branch or tag, build the push payload, sign it and send it,
// all inside one time budget, printing one line per ref. It never throws for a delivery problem:
// the push has already happened, so the pusher gets a clear warning instead, and a push the
// receiver did not take is kept in the outbox (outbox.ts) to be sent again.
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { messageOf } from '../../core/errors.ts';
import { readHookConfig, type HookConfig } from './config.ts';
import { deliverWebhook, type DeliveryResult } from './deliver.ts';
import { keepPush, listOutbox, outboxPath, removeKept, updateKept, type KeptPush, type OutboxEntry } from './outbox.ts';
import type { HookGit } from './git.ts';
import { buildPushPayload, parseRefUpdates, ZERO_SHA, type RefUpdate } from './push-payload.ts';

export interface HookRefReport {
  ref: string;
  before: string;
  after: string;
  delivered: boolean;
  status: number | null;
  outcome: string;
  deliveryId: string | null;
  attempts: number;
}

export interface HookReport {
  ok: boolean;
  deliveries: HookRefReport[];
  /** Kept pushes sent again by this run (delivered or not). */
  resent: HookRefReport[];
  /** Pushes left in the outbox when the run ended. */
  outbox: number;
  warnings: string[];
}

export interface RunHookOptions {
  git: HookGit;
  stdin: string;
  env: NodeJS.ProcessEnv;
  /** One line of output for the pusher (git shows it as `remote: …`). */
  print: (line: string) => void;
  warn: (line: string) => void;
  now?: () => number;
  /**
   * Cuts a delivery attempt off after `ms` on the `now` clock (default AbortSignal.timeout): with
   * `now`, a test moves the hook's budget past its end instead of waiting it out.
   */
  timeout?: (ms: number) => AbortSignal;
  /** Only send the outbox (`--flush`): stdin is not read. */
  flushOnly?: boolean;
}

function shortRef(ref: string): string {
  if (ref.startsWith('refs/heads/')) return ref.slice('refs/heads/'.length);
  if (ref.startsWith('refs/tags/')) return `tag ${ref.slice('refs/tags/'.length)}`;
  return ref;
}

function rerunHint(update: RefUpdate, gitDir: string): string {
  return `to resend, run in ${resolve(gitDir)}: echo '${update.before} ${update.after} ${update.ref}' | svc hook post-receive`;
}

/**
 * Worth keeping: no answer (down, timed out, budget spent), 408/429/5xx, or a refusal a
 * configuration fix cures (401 secret, 403, 404 org or source). Other 4xx refuse the body itself;
 * the same bytes would be refused again.
 */
function keepable(result: DeliveryResult): boolean {
  const status = result.status;
  return status === null || status === 408 || status === 429 || status >= 500 || status === 401 || status === 403 || status === 404;
}

function answered(result: DeliveryResult): string {
  return result.status === null ? result.outcome : `${result.status} ${result.outcome}`;
}

function refReport(update: { ref: string; before: string; after: string }, result: DeliveryResult): HookRefReport {
  return {
    ref: update.ref,
    before: update.before,
    after: update.after,
    delivered: result.ok,
    status: result.status,
    outcome: result.outcome,
    deliveryId: result.deliveryId || null,
    attempts: result.attempts,
  };
}

interface HookRun {
  options: RunHookOptions;
  config: HookConfig;
  deadline: number;
  report: HookReport;
  now: () => number;
  warn: (line: string) => void;
}

function send(run: HookRun, body: string, deliveryId?: string): Promise<DeliveryResult> {
  const { config, deadline } = run;
  if (run.now() >= deadline) {
    return Promise.resolve({ deliveryId: deliveryId ?? '', ok: false, status: null, outcome: `not sent: the hook's ${config.timeoutMs} ms budget is spent`, attempts: 0 });
  }
  return deliverWebhook({
    url: config.webhookUrl,
    secret: config.secret,
    sourceId: config.sourceId,
    event: 'push',
    body: Buffer.from(body),
    deadline,
    now: run.now,
    ...(run.options.timeout ? { timeout: run.options.timeout } : {}),
    ...(deliveryId ? { deliveryId } : {}),
  });
}

/** Kept pushes, oldest first, until one fails again (the receiver is still away: the rest wait too). */
async function flushOutbox(run: HookRun): Promise<void> {
  const gitDir = run.options.git.gitDir;
  const { kept, problems } = await listOutbox(gitDir);
  for (const p of problems) run.warn(p);
  for (const item of kept) {
    const { entry } = item;
    const label = `push ${shortRef(entry.ref)} (kept since ${entry.keptAt})`;
    const result = await send(run, entry.body, entry.deliveryId);
    run.report.resent.push(refReport(entry, result));
    if (result.ok) {
      await removeKept(gitDir, item);
      run.options.print(`svc: resent ${label} -> ${result.status} ${result.outcome}`);
      continue;
    }
    if (!keepable(result)) {
      await removeKept(gitDir, item);
      run.warn(`${label} was refused by ${run.config.webhookUrl} (${answered(result)}) and removed from the outbox; CI will not run for it`);
      continue;
    }
    const updated: KeptPush = { ...item, entry: { ...entry, attempts: entry.attempts + result.attempts, lastOutcome: answered(result) } };
    await updateKept(gitDir, updated);
    run.warn(`${label} is still not delivered (${answered(result)}); it stays in the outbox`);
    break;
  }
}

/** A new push the receiver did not take: kept when sending it again can help, with the warning to match. */
async function keepOrWarn(run: HookRun, update: RefUpdate, label: string, body: string | null, result: DeliveryResult): Promise<void> {
  const gitDir = run.options.git.gitDir;
  const shown = `${answered(result)}${result.attempts > 1 ? `, ${result.attempts} attempts` : ''}`;
  if (body !== null && keepable(result)) {
    const entry: OutboxEntry = {
      version: 1,
      deliveryId: result.deliveryId || randomUUID(),
      event: 'push',
      ref: update.ref,
      before: update.before,
      after: update.after,
      body,
      keptAt: new Date(run.now()).toISOString(),
      attempts: result.attempts,
      lastOutcome: answered(result),
    };
    try {
      const dropped = await keepPush(gitDir, entry, run.now());
      for (const d of dropped) run.warn(`the outbox is full: dropped push ${shortRef(d.entry.ref)} kept since ${d.entry.keptAt}; CI will not run for it`);
      run.warn(`${label} was NOT delivered to ${run.config.webhookUrl} (${shown}); kept in ${resolve(outboxPath(gitDir))} and sent again at the next push, or now with: svc hook post-receive --flush --git-dir ${resolve(gitDir)}`);
      return;
    } catch (error) {
      run.warn(`${label} could not be kept in the outbox (${messageOf(error)})`);
    }
  }
  run.warn(`${label} was NOT delivered to ${run.config.webhookUrl} (${shown}); CI will not run for it. ${rerunHint(update, gitDir)}`);
}

export async function runPostReceive(options: RunHookOptions): Promise<HookReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const report: HookReport = { ok: true, deliveries: [], resent: [], outbox: 0, warnings: [] };
  const warn = (line: string) => {
    report.warnings.push(line);
    options.warn(`svc: warning: ${line}`);
  };

  const { updates, problems } = options.flushOnly === true ? { updates: [], problems: [] } : parseRefUpdates(options.stdin);
  for (const p of problems) warn(p);
  const wanted = updates.filter((u) => u.ref.startsWith('refs/heads/') || u.ref.startsWith('refs/tags/'));
  for (const u of updates) if (!wanted.includes(u)) options.print(`svc: skip ${u.ref} (only branches and tags are sent)`);
  const outboxBefore = (await listOutbox(options.git.gitDir).catch(() => ({ kept: [] }))).kept.length;
  if (wanted.length === 0 && outboxBefore === 0) {
    report.ok = problems.length === 0;
    if (options.flushOnly === true) options.print('svc: the outbox is empty');
    return report;
  }

  let config: HookConfig;
  try {
    config = await readHookConfig(options.git);
  } catch (error) {
    warn(`pushes are not sent to CI: ${messageOf(error)}`);
    report.ok = false;
    return report;
  }
  const run: HookRun = { options, config, deadline: started + config.timeoutMs, report, now, warn };
  await flushOutbox(run);

  for (const update of wanted) {
    const label = `push ${shortRef(update.ref)}${update.after === ZERO_SHA ? ' (deleted)' : ''}`;
    let result: DeliveryResult;
    let body: string | null = null;
    try {
      body = JSON.stringify(await buildPushPayload(options.git, config, update, options.env));
      result = await send(run, body);
    } catch (error) {
      result = { deliveryId: '', ok: false, status: null, outcome: messageOf(error), attempts: 0 };
    }
    report.deliveries.push(refReport(update, result));
    if (result.ok) options.print(`svc: ${label} -> ${result.status} ${result.outcome}`);
    else await keepOrWarn(run, update, label, body, result);
  }
  report.outbox = (await listOutbox(options.git.gitDir)).kept.length;
  // Warnings cover bad stdin lines, unreadable outbox files and every push not delivered.
  report.ok = report.warnings.length === 0 && report.deliveries.every((d) => d.delivered) && report.outbox === 0;
  return report;
}
