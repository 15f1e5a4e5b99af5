// Source provider extension point (github, git, …): everything the ingest pipeline needs from a
// forge, in small steps so the kernel keeps the order (spec "Webhook ingest", processing order).
// The kernel verifies signatures itself (two secrets during rotation); a provider only says
// which bytes and which header value to check.
import type { TSchema } from 'typebox';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

/** Request headers, lower-cased names as node:http gives them. */
export type WebhookHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** What a provider reads from a delivery's headers. */
export interface ProviderDeliveryHeaders {
  /** `push`, `pull_request`, … */
  eventType: string;
  deliveryId: string;
  /** App or hook target id (`X-Provider-Hook-Installation-Target-ID`), when the forge sends one. */
  targetId?: string;
  targetType?: string;
  /** Raw signature header value (`sha256=<hex>`), when present. */
  signature?: string;
}

export type HeaderExtraction =
  | { ok: true; headers: ProviderDeliveryHeaders }
  /** `missing` names the header that was absent or malformed. */
  | { ok: false; missing: string; message: string };

export interface SignatureInput {
  algorithm: 'hmac-sha256';
  /** The exact body bytes as received: never re-serialized JSON. */
  signedBytes: Uint8Array;
  /** Hex digest the sender claims, without any `sha256=` prefix; null when the delivery has none. */
  signature: string | null;
}

export interface RawDelivery {
  headers: ProviderDeliveryHeaders;
  body: Uint8Array;
}

export interface RepositoryRef {
  /** Forge-stable id (`123456`) or, for plain git, the remote URL. */
  id: string;
  /** `owner/name` or a display name. */
  fullName: string;
  cloneUrl?: string;
  installationId?: string;
}

export interface CheckoutCredentials {
  cloneUrl: string;
  /** HTTP basic credentials for git over https (GitHub: `x-access-token` + installation token). */
  username?: string;
  token?: string;
  expiresAt?: Date;
}

/**
 * A source registered with the orchestrator (one GitHub App, one git remote, …). Providers are
 * signed in once per kind; what differs per source reaches them here, per call.
 */
export interface ProviderSource {
  id: string;
  orgId: string;
  routingKey: string;
  /** Non-secret per-source settings, validated against the provider's `sourceSettingsSchema`. */
  settings: Readonly<Record<string, unknown>>;
  /** Per-source credentials opened from their sealed form (an App private key, a deploy token). Never logged. */
  credentials: Readonly<Record<string, string>>;
}

/** One attempt in the forge's own log of the webhooks it sent (GitHub: an App's hook deliveries). */
export interface ForgeDeliveryAttempt {
  /** The forge's id of this attempt (what `redeliver` takes). */
  id: string;
  /** The delivery id the webhook carried (GitHub's `X-GitHub-Delivery`); the same on every attempt. */
  deliveryId: string;
  deliveredAt: Date;
  /** HTTP status the receiver answered; 0 when no answer came. */
  statusCode: number;
  event: string;
  redelivery: boolean;
}

/** What a forge is told about a run: waiting, running, or finished with a conclusion. */
export type RunReportState = 'queued' | 'in_progress' | 'completed';
/** How a finished run ended, in the vocabulary forges share (GitHub check-run conclusions). */
export type RunReportConclusion = 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'neutral';

/** One run status change to report to the forge the run came from (`reportRunStatus`). */
export interface RunStatusReport {
  source: ProviderSource;
  /** The run's repository, with the installation id the event carried when it had one. */
  repository: RepositoryRef;
  run: {
    id: string;
    orgId: string;
    /** Workflow name (a GitHub check run's name). */
    workflow: string;
    /** The run's commit; not a 40-hex sha for runs that are not on a commit (then skip). */
    sha: string;
    ref: string | null;
    eventName: string;
    /** The run status that changed (`held`, `queued`, `running`, `completed`, `failed`, …). */
    status: string;
    reason: string | null;
    createdAt: string;
    startedAt: string | null;
    finishedAt: string | null;
    /** Where a person sees the run (the configured run page). */
    url: string;
  };
  state: RunReportState;
  /** Set exactly when `state` is `completed`. */
  conclusion: RunReportConclusion | null;
  /** One line (`ci: failed`), and Markdown with the reason, the link and the jobs. */
  title: string;
  summary: string;
  /**
   * What the last successful report of this run to this source returned (`externalId`), so a
   * later change updates the same forge object; null for the first report of the run.
   */
  externalId: string | null;
}

export type RunStatusResult =
  /** Reported; `externalId` names the forge object (a check run id) later reports update. */
  | { outcome: 'reported'; externalId: string }
  /** Not reported, on purpose (no commit, turned off for the source); never retried. */
  | { outcome: 'skipped'; reason: string };

export interface SourceProviderExtensionPoint extends PluginInstance {
  /** TypeBox schema of `ProviderSource.settings`; checked when an operator adds a source. */
  readonly sourceSettingsSchema?: TSchema;
  /** Provider type used in ingest paths and routing keys (`github`, `git`). */
  readonly providerKind: string;
  /** Routing key for a delivery (exact match first, then provider-type prefix). */
  routingKey(headers: ProviderDeliveryHeaders): string;
  extractHeaders(headers: WebhookHeaders): HeaderExtraction;
  signatureInput(delivery: RawDelivery): SignatureInput;
  /**
   * Normalized event (branch, event type, action, sender, repository). Typed `unknown` here;
   * schemas/event.ts owns the shape and the kernel validates the result against it.
   */
  normalize(delivery: RawDelivery, payload: unknown): unknown;
  /**
   * Raw lock-file bytes at `sha`, or null when the repository has none there. `ref` is the ref
   * the event says was pushed to `sha` (`refs/heads/main`), when there is one: a hint a provider
   * may use to fetch less (it is payload text: check it before use, and never trust it over `sha`).
   */
  fetchLockFile(request: { source: ProviderSource; repository: RepositoryRef; sha: string; ref?: string | null }): Promise<Uint8Array | null>;
  /**
   * Optional: a file's bytes at `sha`, or null when no regular file is at `path` there (content
   * requirements, a trigger's `requires`). `path` is repository-relative (`docs/a.md`); providers
   * refuse an absolute path, a `..` segment or a leading `-`. Without it a candidate with
   * `requires` cannot be evaluated and is dropped.
   */
  readFile?(request: { source: ProviderSource; repository: RepositoryRef; sha: string; path: string }): Promise<Uint8Array | null>;
  /** Paths changed between two commits (for path filters). */
  changedFiles(request: { source: ProviderSource; repository: RepositoryRef; base: string; head: string }): Promise<string[]>;
  /** Short-lived credentials an agent uses to check the repository out. */
  checkoutCredentials(request: { source: ProviderSource; repository: RepositoryRef }): Promise<CheckoutCredentials>;
  /**
   * Optional: shows a run's status on the forge (GitHub: a check run on the run's commit). The
   * kernel's forge status reporter calls it once per run status change, in order per run, from
   * its own delivery queue, never inside a run's transaction: whatever it does or throws never
   * changes the run.
   *
   * - The first report of a run has `externalId: null`; the provider creates the forge object
   *   and returns its id. Later reports carry that id and update the same object (a provider
   *   whose object vanished may create a new one and return the new id).
   * - A report may arrive for a later state without the earlier ones (they were superseded):
   *   creating the object straight in `completed` must work.
   * - `{ outcome: 'skipped', reason }` declines for good (the run is not on a commit, or the
   *   source turned reports off); decide that before any I/O.
   * - Throwing asks for a retry with back-off, up to the configured attempts. An SvcError of
   *   kind `input` is never retried (the forge refused the request itself: fixing it needs a
   *   change, not time). Put the forge's HTTP status in `details.statusCode` when there is one;
   *   operators see it on the delivery.
   */
  reportRunStatus?(request: RunStatusReport): Promise<RunStatusResult>;
  /**
   * Optional, with `redeliver`: the forge's log of webhook attempts for this source since
   * `since`, newest first. The kernel's reconciliation (kernel/orchestrator/reconcile/) asks for
   * it after downtime and has the forge send again every delivery no attempt of which was
   * answered 2xx and that the orchestrator never recorded.
   */
  listDeliveryAttempts?(request: { source: ProviderSource; since: Date }): Promise<ForgeDeliveryAttempt[]>;
  /** Asks the forge to send attempt `id` again (same delivery id, so a repeat is a duplicate). */
  redeliver?(request: { source: ProviderSource; id: string }): Promise<void>;
}

export const sourceProviderExtensionPoint = createExtensionPointRef<SourceProviderExtensionPoint>()({
  id: 'providers',
  kind: 'provider',
  members: {
    providerKind: 'string',
    routingKey: 'function',
    extractHeaders: 'function',
    signatureInput: 'function',
    normalize: 'function',
    fetchLockFile: 'function',
    changedFiles: 'function',
    checkoutCredentials: 'function',
  },
});
