// Test fixtures for `svc run remote`: `.svc/tests/*.ts` files declare events to run against.
import type { Trigger } from './triggers.ts';

export interface FixturePullRequest {
  readonly number?: number;
  readonly head?: string;
  readonly base?: string;
  readonly title?: string;
  /** Treat the pull request as coming from a fork. */
  readonly fork?: boolean;
}

export interface FixtureOptions {
  /** Any trigger function result, such as `pr({ actions: ['opened'] })`. */
  readonly event: Trigger;
  /** Overrides; defaults come from the local git repository. */
  readonly branch?: string;
  readonly sha?: string;
  /** `owner/repo`. */
  readonly repo?: string;
  readonly pr?: FixturePullRequest;
  /** Local context name → orchestrator context name. */
  readonly secrets?: Readonly<Record<string, string>>;
}

export type FixtureSource = FixtureOptions | (() => Promise<FixtureOptions>);

export interface Fixture {
  readonly kind: 'svc.fixture';
  readonly id: string;
  readonly options: FixtureSource;
}

export function fixture(id: string, options: FixtureSource): Fixture {
  return Object.freeze({ kind: 'svc.fixture', id, options });
}

export function isFixture(value: unknown): value is Fixture {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.fixture';
}

/** The fixture's options, calling the async form. */
export async function resolveFixture(value: Fixture): Promise<FixtureOptions> {
  return typeof value.options === 'function' ? await value.options() : value.options;
}
