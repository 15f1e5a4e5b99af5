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
  /** Raw lock-file bytes at `sha`, or null when the repository has none there. */
  fetchLockFile(request: { source: ProviderSource; repository: RepositoryRef; sha: string }): Promise<Uint8Array | null>;
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
