// The post-receive hook itself: for each pushed branch or tag, build the push payload, sign it
// and send it, all inside one time budget, printing one line per ref. It never throws for a
// delivery problem: the push has already happened, so the pusher gets a clear warning instead.
import { resolve } from 'node:path';
import { messageOf } from '../../core/errors.ts';
import { readHookConfig, type HookConfig } from './config.ts';
import { deliverWebhook, type DeliveryResult } from './deliver.ts';
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
}

function shortRef(ref: string): string {
  if (ref.startsWith('refs/heads/')) return ref.slice('refs/heads/'.length);
  if (ref.startsWith('refs/tags/')) return `tag ${ref.slice('refs/tags/'.length)}`;
  return ref;
}

function rerunHint(update: RefUpdate, gitDir: string): string {
  return `to resend, run in ${resolve(gitDir)}: echo '${update.before} ${update.after} ${update.ref}' | svc hook post-receive`;
}

export async function runPostReceive(options: RunHookOptions): Promise<HookReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const report: HookReport = { ok: true, deliveries: [], warnings: [] };
  const warn = (line: string) => {
    report.warnings.push(line);
    options.warn(`svc: warning: ${line}`);
  };

  const { updates, problems } = parseRefUpdates(options.stdin);
  for (const p of problems) warn(p);
  const wanted = updates.filter((u) => u.ref.startsWith('refs/heads/') || u.ref.startsWith('refs/tags/'));
  for (const u of updates) if (!wanted.includes(u)) options.print(`svc: skip ${u.ref} (only branches and tags are sent)`);
  if (wanted.length === 0) {
    report.ok = problems.length === 0;
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
  const deadline = started + config.timeoutMs;

  for (const update of wanted) {
    const label = `push ${shortRef(update.ref)}${update.after === ZERO_SHA ? ' (deleted)' : ''}`;
    let result: DeliveryResult;
    try {
      if (now() >= deadline) {
        result = { deliveryId: '', ok: false, status: null, outcome: `not sent: the hook's ${config.timeoutMs} ms budget is spent`, attempts: 0 };
      } else {
        const payload = await buildPushPayload(options.git, config, update, options.env);
        result = await deliverWebhook({
          url: config.webhookUrl,
          secret: config.secret,
          sourceId: config.sourceId,
          event: 'push',
          body: Buffer.from(JSON.stringify(payload)),
          deadline,
        });
      }
    } catch (error) {
      result = { deliveryId: '', ok: false, status: null, outcome: messageOf(error), attempts: 0 };
    }
    report.deliveries.push({
      ref: update.ref,
      before: update.before,
      after: update.after,
      delivered: result.ok,
      status: result.status,
      outcome: result.outcome,
      deliveryId: result.deliveryId || null,
      attempts: result.attempts,
    });
    if (result.ok) {
      options.print(`svc: ${label} -> ${result.status} ${result.outcome}`);
    } else {
      report.ok = false;
      const answered = result.status === null ? result.outcome : `${result.status} ${result.outcome}`;
      warn(
        `${label} was NOT delivered to ${config.webhookUrl} (${answered}${result.attempts > 1 ? `, ${result.attempts} attempts` : ''}); CI will not run for it. ${rerunHint(update, options.git.gitDir)}`,
      );
    }
  }
  return report;
}
