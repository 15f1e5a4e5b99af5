// The shape every contract suite shares. A contract is a list of named points; each point runs
// against a plugin freshly signed in through the kernel's own sign-in, with the config slice and
// inputs a harness supplies. Nothing here knows a test framework: a runner reports results and an
// adapter (svc/testing) turns them into whatever the author's test runner expects.
import type { Logger } from 'pino';
import type { PluginKind } from '../../../schemas/plugin.ts';
import type { SvcPlugin } from '../../plugins/define-plugin.ts';
import type { ExtensionPointFor } from '../index.ts';

/** What a point may hold for its own lifetime; everything registered is released after it. */
export interface ContractScope {
  /** Run `fn` after the point, last registered first (errors are reported, never hidden). */
  teardown(fn: () => unknown): void;
  /** A fresh directory removed after the point. */
  tempDir(): Promise<string>;
  /** Aborted when the point's time limit passes. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
}

/**
 * A plugin object (built-in or imported) or a module path, as config would name it. Objects are
 * checked by the plugin brand at run time, so a plugin built against another copy of svc works.
 */
export type ContractSubject = SvcPlugin | string | { readonly id: string; readonly kind: PluginKind };

export interface BaseHarness<K extends PluginKind> {
  /**
   * The plugin's config slice (what the kernel would pass as `<kind>:<id>`). Called once per
   * point, so a slice may point at fresh state (a temp directory, a new listener).
   */
  config?(scope: ContractScope): unknown;
  /** After sign-in, before the point (bind a key vault, mount HTTP routes, seed data). */
  prepare?(instance: ExtensionPointFor<K>, scope: ContractScope): unknown;
  /** Points not to run here, each with the reason reported in its place. */
  skip?: Readonly<Record<string, string>>;
  /** Per-point time limit, default 120 000 ms (tests run on busy machines). */
  pointTimeoutMs?: number;
  /** Sign-in's `create` time limit, default the kernel's. */
  createTimeoutMs?: number;
  /** Directory module paths resolve against, default cwd. */
  baseDir?: string;
  logger?: Logger;
}

export interface ContractContext<K extends PluginKind, H> {
  readonly kind: K;
  /** The plugin's id (from its manifest). */
  readonly id: string;
  /** Signed in for this point only; closed after it. */
  readonly instance: ExtensionPointFor<K>;
  readonly harness: H;
  readonly scope: ContractScope;
  /** Sign another instance of the same plugin in with `config` (closed after the point). */
  signIn(config: unknown): Promise<ExtensionPointFor<K>>;
}

export interface ContractPoint<K extends PluginKind, H> {
  /** `<area>: <what holds>`, e.g. `verify: rejects a tampered body`. Unique within the suite. */
  readonly point: string;
  /** Throws (any error) when the plugin breaks the point. */
  run(ctx: ContractContext<K, H>): Promise<void>;
}

export interface ContractSuite<K extends PluginKind, H> {
  readonly kind: K;
  readonly points: readonly ContractPoint<K, H>[];
}

export interface ContractPointResult {
  point: string;
  status: 'passed' | 'failed' | 'skipped';
  /** failed: `<kind> "<id>" fails contract point "<point>": <reason>`; skipped: the reason. */
  message?: string;
  error?: unknown;
}

export interface ContractReport {
  kind: PluginKind;
  /** The plugin's id, or the module path when it never got as far as a manifest. */
  id: string;
  ok: boolean;
  results: ContractPointResult[];
}

export interface RunContractOptions {
  /** Only these points (by name); others are not reported. */
  only?: readonly string[];
  /** Called as each point finishes, in order (adapters report live from here). */
  onResult?(result: ContractPointResult): void | Promise<void>;
}
